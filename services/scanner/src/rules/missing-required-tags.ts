import { defineRule } from './define';
import { tagKeyOf } from './spelling';
import { untaggableCategories } from './taggable';
import { resourceTypeOf } from './window';

/** A resource that lacks one of the team's required tag keys (or carries it empty). */
export const missingRequiredTags = defineRule({
  id: 'tags-missing-required',
  severity: 'medium',
  category: 'tags',
  title: 'Resource is missing required tags',
  description:
    "The resource's cost cannot be allocated: it lacks one or more of the tag keys the team requires. " +
    'Keys match whatever their case and `-`, `_` or spaces (`cost-center`, `cost_center` and `costcenter` ' +
    'satisfy a required `CostCenter`, a Google Cloud label `environment` a required `Environment`); a key ' +
    'with a blank value counts as missing.',
  recommendation:
    'Add the missing tags to the resource (or to the template that creates it) so its cost is allocated.',
  needs: "The team's required tag keys (`costgov teams required-tags`); one row of the resource, no history.",
  savings: 'none',
  neverFlags:
    'A resource whose charge cannot carry tags (ChargeCategory Tax, Credit, Purchase or Adjustment), charges ' +
    'without a ResourceId, or a key present in another case or with other separators.',
  resources(data, { requiredTags, currency }) {
    // One required key per normalised form, in the team's spelling of its first occurrence.
    const seen = new Set<string>();
    const wanted = requiredTags.filter((key) => !seen.has(tagKeyOf(key)) && seen.add(tagKeyOf(key)));
    if (wanted.length === 0) return [];
    return data.resources.flatMap((resource) => {
      if (untaggableCategories.has(resource.chargeCategory)) return [];
      const present = new Set(
        Object.entries(resource.tags)
          .filter(([, value]) => value.trim() !== '')
          .map(([key]) => tagKeyOf(key)),
      );
      const missing = wanted.filter((key) => !present.has(tagKeyOf(key)));
      if (missing.length === 0) return [];
      return [
        {
          ruleId: this.id,
          resourceId: resource.resourceId,
          resourceType: resourceTypeOf(resource),
          severity: this.severity,
          title: this.title,
          description: `${resource.resourceId} (${resource.serviceName || 'unknown service'}) has no ${missing.join(', ')} tag${missing.length > 1 ? 's' : ''}.`,
          recommendation: `Tag ${resource.resourceId} with ${missing.join(', ')}.`,
          currency,
        },
      ];
    });
  },
});

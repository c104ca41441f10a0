import type { Rule } from './types';
import { resourceTypeOf } from './window';

/** A resource that lacks one of the team's required tag keys (or carries it empty). */
export const missingRequiredTags: Rule = {
  id: 'tags-missing-required',
  severity: 'medium',
  category: 'tags',
  title: 'Resource is missing required tags',
  description:
    "The resource's cost cannot be allocated: it lacks one or more of the tag keys the team requires.",
  recommendation:
    'Add the missing tags to the resource (or to the template that creates it) so its cost is allocated.',
  evaluate(data, { requiredTags, currency }) {
    if (requiredTags.length === 0) return [];
    return data.resources.flatMap((resource) => {
      const missing = requiredTags.filter((key) => !(resource.tags[key] ?? '').trim());
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
};

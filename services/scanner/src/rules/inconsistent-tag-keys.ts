import { defineRule } from './define';
import { canonicalKey, tagKeyOf } from './spelling';

const byCount = (a: [string, number], b: [string, number]) => b[1] - a[1] || a[0].localeCompare(b[0]);

/**
 * One tag meaning written as several keys (`env`, `environment`): reports split the cost. Keys that
 * differ only by case or by `-`, `_` and spaces are one key (tagKeyOf), as for the required keys: a
 * Google Cloud `environment` beside an AWS `Environment` is not an inconsistency.
 */
export const inconsistentTagKeys = defineRule({
  id: 'tags-inconsistent-keys',
  severity: 'low',
  category: 'tags',
  title: 'Tag key spelled several ways',
  description:
    'The same tag is written with different keys (`env` and `environment`, `cc` and `CostCenter`), so cost ' +
    'grouped by tag is split between them. Keys differing only by case or by `-`, `_` and spaces count as ' +
    'one key (Google Cloud labels must be lower case) and are listed together.',
  recommendation: 'Pick one key, retag the resources using the others, and enforce it with a tag policy.',
  needs: 'Tags of the rows in the window; no history.',
  savings: 'none',
  neverFlags:
    'Keys that differ only by case or by `-`, `_` and spaces (`Environment` and `environment`, `CostCenter` ' +
    'and `cost-center`), or unrelated keys.',
  project(data, { currency }) {
    // Meaning -> key as compared -> spelling as written -> resources.
    const meanings = new Map<string, Map<string, Map<string, number>>>();
    for (const usage of data.tagUsage) {
      const canonical = canonicalKey(usage.key);
      const forms = meanings.get(canonical) ?? new Map<string, Map<string, number>>();
      const spellings = forms.get(tagKeyOf(usage.key)) ?? new Map<string, number>();
      spellings.set(usage.key, (spellings.get(usage.key) ?? 0) + usage.resources);
      forms.set(tagKeyOf(usage.key), spellings);
      meanings.set(canonical, forms);
    }
    return [...meanings]
      .filter(([, forms]) => forms.size > 1)
      .map(([canonical, forms]) => {
        const ranked = [...forms.values()]
          .map((spellings) => {
            const written = [...spellings].sort(byCount);
            return {
              label: written.map(([key]) => `'${key}'`).join('/'),
              top: written[0]![0],
              count: written.reduce((sum, [, count]) => sum + count, 0),
            };
          })
          .sort((a, b) => byCount([a.top, a.count], [b.top, b.count]));
        return {
          ruleId: this.id,
          resourceId: `tag-key:${canonical}`,
          resourceType: 'tag-key',
          severity: this.severity,
          title: this.title,
          description: `The ${canonical} tag is written as ${ranked.map(({ label, count }) => `${label} (${count} resource${count === 1 ? '' : 's'})`).join(', ')}.`,
          recommendation: `Use '${ranked[0]!.top}' everywhere and retag what uses ${ranked
            .slice(1)
            .map(({ label }) => label)
            .join(', ')}.`,
          currency,
        };
      });
  },
});

import { defineRule } from './define';
import { canonicalValue, tagKeyOf } from './spelling';

/**
 * One value of a tag spelled several ways (`prod`, `Production`): reports split the cost. The key is
 * compared as tagKeyOf does (case, `-`, `_` and spaces aside), so `Environment=prod` and
 * `environment=Production` are one key with two spellings of one value.
 */
export const inconsistentTagValues = defineRule({
  id: 'tags-inconsistent-values',
  severity: 'low',
  category: 'tags',
  title: 'Tag value spelled several ways',
  description:
    'A tag key carries the same value in different spellings (`prod`, `Production`, `prd`), so cost grouped ' +
    'by that value is split. Keys are compared whatever their case and `-`, `_` or spaces.',
  recommendation:
    'Normalise the values to one spelling and enforce an allowed-values list in the tag policy.',
  needs: 'Tags of the rows in the window; no history.',
  savings: 'none',
  neverFlags: 'Empty values, or one value used under different keys (`env=prod` beside `tier=production`).',
  project(data, { currency }) {
    const spellings = new Map<
      string,
      { keys: Map<string, number>; canonical: string; values: Map<string, number> }
    >();
    for (const usage of data.tagUsage) {
      const canonical = canonicalValue(usage.value);
      if (!canonical) continue;
      const id = `${tagKeyOf(usage.key)}=${canonical}`;
      const entry = spellings.get(id) ?? {
        keys: new Map<string, number>(),
        canonical,
        values: new Map<string, number>(),
      };
      entry.keys.set(usage.key, (entry.keys.get(usage.key) ?? 0) + usage.resources);
      entry.values.set(usage.value, (entry.values.get(usage.value) ?? 0) + usage.resources);
      spellings.set(id, entry);
    }
    const byCount = (a: [string, number], b: [string, number]) => b[1] - a[1] || a[0].localeCompare(b[0]);
    return [...spellings]
      .filter(([, entry]) => entry.values.size > 1)
      .map(([id, { keys, values }]) => {
        const key = [...keys].sort(byCount)[0]![0];
        const ranked = [...values].sort(byCount);
        return {
          ruleId: this.id,
          resourceId: `tag-value:${id}`,
          resourceType: 'tag-value',
          severity: this.severity,
          title: this.title,
          description: `Tag '${key}' carries ${ranked.map(([value, count]) => `'${value}' (${count} resource${count === 1 ? '' : 's'})`).join(', ')} for one meaning.`,
          recommendation: `Use '${key}=${ranked[0]![0]}' everywhere.`,
          currency,
        };
      });
  },
});

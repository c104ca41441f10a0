import { canonicalValue } from './spelling';
import type { Rule } from './types';

/** One value of a tag spelled several ways (`prod`, `Production`): reports split the cost. */
export const inconsistentTagValues: Rule = {
  id: 'tags-inconsistent-values',
  severity: 'low',
  category: 'tags',
  title: 'Tag value spelled several ways',
  description:
    'A tag key carries the same value in different spellings, so cost grouped by that value is split.',
  recommendation:
    'Normalise the values to one spelling and enforce an allowed-values list in the tag policy.',
  evaluate(data, { currency }) {
    const spellings = new Map<string, { key: string; canonical: string; values: Map<string, number> }>();
    for (const usage of data.tagUsage) {
      const canonical = canonicalValue(usage.value);
      if (!canonical) continue;
      const id = `${usage.key}=${canonical}`;
      const entry = spellings.get(id) ?? { key: usage.key, canonical, values: new Map<string, number>() };
      entry.values.set(usage.value, (entry.values.get(usage.value) ?? 0) + usage.resources);
      spellings.set(id, entry);
    }
    return [...spellings]
      .filter(([, entry]) => entry.values.size > 1)
      .map(([id, { key, values }]) => {
        const ranked = [...values].sort((a, b) => b[1] - a[1] || a[0].localeCompare(b[0]));
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
};

import { canonicalKey } from './spelling';
import type { Rule } from './types';

/** One tag meaning spelled as several keys (`env`, `Env`, `environment`): reports split the cost. */
export const inconsistentTagKeys: Rule = {
  id: 'tags-inconsistent-keys',
  severity: 'low',
  category: 'tags',
  title: 'Tag key spelled several ways',
  description: 'The same tag is written with different keys, so cost grouped by tag is split between them.',
  recommendation: 'Pick one key, retag the resources using the others, and enforce it with a tag policy.',
  evaluate(data, { currency }) {
    const spellings = new Map<string, Map<string, number>>();
    for (const usage of data.tagUsage) {
      const canonical = canonicalKey(usage.key);
      const keys = spellings.get(canonical) ?? new Map<string, number>();
      keys.set(usage.key, (keys.get(usage.key) ?? 0) + usage.resources);
      spellings.set(canonical, keys);
    }
    return [...spellings]
      .filter(([, keys]) => keys.size > 1)
      .map(([canonical, keys]) => {
        const ranked = [...keys].sort((a, b) => b[1] - a[1] || a[0].localeCompare(b[0]));
        return {
          ruleId: this.id,
          resourceId: `tag-key:${canonical}`,
          resourceType: 'tag-key',
          severity: this.severity,
          title: this.title,
          description: `The ${canonical} tag is written as ${ranked.map(([key, count]) => `'${key}' (${count} resource${count === 1 ? '' : 's'})`).join(', ')}.`,
          recommendation: `Use '${ranked[0]![0]}' everywhere and retag what uses ${ranked
            .slice(1)
            .map(([key]) => `'${key}'`)
            .join(', ')}.`,
          currency,
        };
      });
  },
};

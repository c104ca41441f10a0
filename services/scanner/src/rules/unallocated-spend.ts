import type { Rule } from './types';
import { money } from './window';

const mediumShare = 0.1;
const highShare = 0.3;

/** A connection whose spend carries no tag at all above 10% (high above 30%). */
export const unallocatedSpend: Rule = {
  id: 'spend-unallocated-share',
  severity: 'medium',
  category: 'spend',
  title: 'Share of spend carries no tags',
  description:
    'Part of the spend of a connection carries no tag at all, so no team, project or environment owns it.',
  recommendation:
    'Tag the untagged resources (see tags-missing-required) or allocate the rest with cost-allocation rules.',
  evaluate(data, { currency }) {
    return data.totals.flatMap((totals) => {
      if (totals.effectiveCost <= 0) return [];
      const share = totals.untaggedCost / totals.effectiveCost;
      if (share < mediumShare) return [];
      return [
        {
          ruleId: this.id,
          resourceId: totals.connectionId,
          resourceType: 'connection',
          severity: share >= highShare ? 'high' : 'medium',
          title: this.title,
          description: `${(share * 100).toFixed(1)}% of the connection's spend (${money(totals.untaggedCost)} of ${money(totals.effectiveCost)} ${currency}) carries no tags.`,
          recommendation: this.recommendation,
          currency,
        },
      ];
    });
  },
};

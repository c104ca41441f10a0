import type { Rule } from './types';
import { money } from './window';

const minShare = 0.2;

/** A connection whose spend mostly has no resource id (shared or account-level charges nobody owns). */
export const unattributedSpend: Rule = {
  id: 'spend-unattributed-share',
  severity: 'low',
  category: 'spend',
  title: 'Share of spend belongs to no resource',
  description:
    "Over 20% of the connection's spend has no resource id (account-level, shared or support charges), so it cannot be traced to an owner.",
  recommendation:
    'Review the charges without a resource id and split them across teams with a shared-cost allocation.',
  evaluate(data, { currency }) {
    return data.totals.flatMap((totals) => {
      if (totals.effectiveCost <= 0) return [];
      const share = totals.unattributedCost / totals.effectiveCost;
      if (share < minShare) return [];
      return [
        {
          ruleId: this.id,
          resourceId: totals.connectionId,
          resourceType: 'connection',
          severity: this.severity,
          title: this.title,
          description: `${(share * 100).toFixed(1)}% of the connection's spend (${money(totals.unattributedCost)} ${currency}) has no resource id.`,
          recommendation: this.recommendation,
          currency,
        },
      ];
    });
  },
};

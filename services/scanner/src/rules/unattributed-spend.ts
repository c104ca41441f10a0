import { defineRule } from './define';
import { money } from './window';

const minShare = 0.2;

/**
 * A connection whose spend mostly has no resource id (shared or account-level charges nobody owns). Tax,
 * Credit, Purchase and Adjustment charges belong to no resource by nature: left out of the share, and
 * the description says how much that is.
 */
export const unattributedSpend = defineRule({
  id: 'spend-unattributed-share',
  severity: 'low',
  category: 'spend',
  title: 'Share of spend belongs to no resource',
  description:
    "20% or more of the connection's spend has no resource id (account-level, shared or support charges), " +
    'so it cannot be traced to an owner. Tax, Credit, Purchase and Adjustment charges, which belong to no ' +
    'resource by nature, are left out of the share (the finding says how much).',
  recommendation:
    'Review the charges without a resource id and split them across teams with a shared-cost allocation.',
  needs:
    'The rows of the window (no history); fires at 20 % of the spend other than tax, credits, purchases and adjustments.',
  savings: 'none',
  neverFlags: 'Taxes, credits, purchases and adjustments; a connection with no other spend.',
  project(data, { currency }) {
    return data.totals.flatMap((totals) => {
      const counted = totals.effectiveCost - totals.untaggableCategoryCost;
      if (counted <= 0) return [];
      const share = totals.unattributedCost / counted;
      if (share < minShare) return [];
      const leftOut =
        totals.untaggableCategoryCost !== 0
          ? ` Left out: ${money(totals.untaggableCategoryCost)} ${currency} (net) of tax, credit, purchase and adjustment charges.`
          : '';
      return [
        {
          ruleId: this.id,
          resourceId: totals.connectionId,
          resourceType: 'connection',
          severity: this.severity,
          title: this.title,
          description: `${(share * 100).toFixed(1)}% of the connection's spend (${money(totals.unattributedCost)} of ${money(counted)} ${currency}) has no resource id.${leftOut}`,
          recommendation: this.recommendation,
          currency,
        },
      ];
    });
  },
});

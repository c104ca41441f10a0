import { defineRule } from './define';
import { money } from './window';

const mediumShare = 0.1;
const highShare = 0.3;

/**
 * A connection whose taggable spend carries no tag at all above 10% (high above 30%). Taggable: rows with
 * a ResourceId whose ChargeCategory is not Tax, Credit, Purchase or Adjustment; the rest cannot carry
 * tags, so it is left out of the share and the description says how much that is.
 */
export const unallocatedSpend = defineRule({
  id: 'spend-unallocated-share',
  severity: 'medium',
  category: 'spend',
  title: 'Share of spend carries no tags',
  description:
    'Part of the spend of a connection that could carry tags carries none, so no team, project or ' +
    'environment owns it. The share is of the spend that can carry tags: charges without a ResourceId and ' +
    'Tax, Credit, Purchase and Adjustment charges are left out (the finding says how much).',
  recommendation:
    'Tag the untagged resources (see tags-missing-required) or allocate the rest with cost-allocation rules.',
  needs: 'The rows of the window (no history); fires at 10 % of the taggable spend, high from 30 %.',
  savings: 'none',
  neverFlags:
    'Taxes, credits, purchases, adjustments and charges without a ResourceId (support, account-level fees), ' +
    'which cannot carry tags; a connection without taggable spend.',
  project(data, { currency }) {
    return data.totals.flatMap((totals) => {
      const noResource = totals.unattributedCost;
      const taggable = totals.effectiveCost - totals.untaggableCategoryCost - noResource;
      if (taggable <= 0) return [];
      const share = totals.untaggedCost / taggable;
      if (share < mediumShare) return [];
      const leftOut =
        noResource !== 0 || totals.untaggableCategoryCost !== 0
          ? ` Left out as they cannot carry tags: ${money(noResource)} ${currency} of charges without a resource id and ${money(totals.untaggableCategoryCost)} ${currency} (net) of tax, credit, purchase and adjustment charges.`
          : '';
      return [
        {
          ruleId: this.id,
          resourceId: totals.connectionId,
          resourceType: 'connection',
          severity: share >= highShare ? 'high' : 'medium',
          title: this.title,
          description: `${(share * 100).toFixed(1)}% of the connection's taggable spend (${money(totals.untaggedCost)} of ${money(taggable)} ${currency}) carries no tags.${leftOut}`,
          recommendation: this.recommendation,
          currency,
        },
      ];
    });
  },
});

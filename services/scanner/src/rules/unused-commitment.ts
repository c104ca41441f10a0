import type { Rule } from './types';
import { money, monthly } from './window';

/** A commitment (savings plan, reserved instance) whose paid-for capacity went partly or wholly unused. */
export const unusedCommitment: Rule = {
  id: 'commitments-unused',
  severity: 'high',
  category: 'commitments',
  title: 'Unused or underused commitment',
  description:
    'Part of a commitment discount (savings plan or reservation) was billed as unused: paid for, not consumed.',
  recommendation:
    'Move matching usage onto the commitment (region, family, account scope), exchange or sell it, and size the next purchase to the steady usage.',
  evaluate(data, { currency }) {
    return data.resources.flatMap((resource) => {
      const unusedRow = resource.commitmentDiscountStatus === 'Unused';
      if (resource.unusedCommitmentCost <= 0 && !unusedRow) return [];
      const unused = resource.unusedCommitmentCost;
      const share = resource.effectiveCost > 0 ? Math.min(1, unused / resource.effectiveCost) : 1;
      const savings = money(monthly(unused, data));
      const commitment = resource.commitmentDiscountId || resource.resourceId;
      const kind = resource.commitmentDiscountType || 'commitment';
      return [
        {
          ruleId: this.id,
          resourceId: resource.resourceId,
          resourceType: resource.commitmentDiscountType || resource.resourceType || 'commitment',
          severity: this.severity,
          title: this.title,
          description: `${kind} ${commitment}: ${Math.round(share * 100)}% of its cost in the window went unused (${money(unused)} ${currency}).`,
          recommendation: `Put usage on ${commitment} or exchange it: the unused part costs ${savings} ${currency} a month.`,
          estimatedMonthlySavings: savings,
          currency,
        },
      ];
    });
  },
};

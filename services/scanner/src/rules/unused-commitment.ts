import { defineRule } from './define';
import type { RuleResult } from './types';
import { coveredDays, money, perMonth, projectedDays, spanText } from './window';

/** A commitment (savings plan, reserved instance) whose paid-for capacity went partly or wholly unused. */
export const unusedCommitment = defineRule({
  id: 'commitments-unused',
  severity: 'high',
  category: 'commitments',
  title: 'Unused or underused commitment',
  description:
    'Part of a commitment discount (savings plan or reservation) was billed as unused: paid for, not consumed.',
  recommendation:
    'Move matching usage onto the commitment (region, family, account scope), exchange or sell it, and size the next purchase to the steady usage.',
  needs:
    'Rows naming the commitment (CommitmentDiscountId) with CommitmentDiscountStatus Used and Unused; any number of days.',
  savings:
    "The commitment's Unused rows' cost per covered day (first to last row naming it) times 30.44; its unused share is Unused / (Used + Unused) of those rows.",
  neverFlags: 'Commitments whose rows are all Used; the purchase or recurring fee of a commitment itself.',
  // The commitments the rows name, from the aggregates.
  project(data, { currency }) {
    const results: RuleResult[] = [];
    for (const commitment of data.commitments) {
      const unused = commitment.unusedCost;
      if (unused <= 0) continue;
      const share = unused / (commitment.usedCost + unused);
      const days = coveredDays(commitment);
      const savings = money(perMonth(unused, days));
      const id = commitment.commitmentDiscountId;
      const kind = commitment.commitmentDiscountType || 'Commitment';
      results.push({
        ruleId: this.id,
        resourceId: id,
        resourceType: commitment.commitmentDiscountType || 'commitment',
        severity: this.severity,
        title: this.title,
        description: `${kind} ${id}: ${Math.round(share * 100)}% unused over ${spanText(commitment)} (${money(unused)} ${currency} unused, ${money(commitment.usedCost)} ${currency} used).`,
        recommendation: `Put usage on ${id} or exchange it: the unused part costs ${savings} ${currency} a month.`,
        estimatedMonthlySavings: savings,
        projectedFromDays: projectedDays(days),
        currency,
      });
    }
    return results;
  },
  // Unused rows whose commitment the data does not name (no CommitmentDiscountId): no share to state.
  resources(data, { currency }) {
    const judged = new Set(data.commitments.map((c) => `${c.connectionId}/${c.commitmentDiscountId}`));
    const results: RuleResult[] = [];
    for (const resource of data.resources) {
      if (resource.unusedCommitmentCost <= 0) continue;
      if (
        judged.has(`${resource.connectionId}/${resource.commitmentDiscountId}`) ||
        judged.has(`${resource.connectionId}/${resource.resourceId}`)
      )
        continue;
      const days = coveredDays(resource);
      const savings = money(perMonth(resource.unusedCommitmentCost, days));
      const kind = resource.commitmentDiscountType || 'Commitment';
      results.push({
        ruleId: this.id,
        resourceId: resource.resourceId,
        resourceType: resource.commitmentDiscountType || resource.resourceType || 'commitment',
        severity: this.severity,
        title: this.title,
        description: `${kind} ${resource.resourceId}: ${money(resource.unusedCommitmentCost)} ${currency} billed as unused over ${spanText(resource)}.`,
        recommendation: `Put usage on ${resource.resourceId} or exchange it: the unused part costs ${savings} ${currency} a month.`,
        estimatedMonthlySavings: savings,
        projectedFromDays: projectedDays(days),
        currency,
      });
    }
    return results;
  },
});

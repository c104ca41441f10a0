import { defineRule } from './define';
import { mayLeaveUnused, unusedCommitmentByConnection } from './commitment-room';
import type { RuleResult, ScanResource } from './types';
import {
  coveredDays,
  isHourly,
  money,
  monthlyCostOf,
  projectedDays,
  resourceTypeOf,
  runningHours,
} from './window';

/** Running this share of the hours from its first to its last charge is steady enough for a commitment. */
const steady = 0.8;
/** Paying at least this share of list price means no discount applies. */
const onDemand = 0.98;
/** What a one-year, no-upfront savings plan or reservation typically takes off on-demand compute. */
const commitmentDiscount = 0.3;
const minMonthly = 10;
/**
 * Days of a resource's charges before a one-year commitment is advised: a full month (a FinOps team
 * sizes a commitment on at least one month of steady usage, not two weeks).
 */
export const minCommitmentDays = 28;

/** Compute billed at list price nearly every hour: a commitment would cover it for less. */
export const steadyOnDemand = defineRule({
  id: 'commitments-steady-on-demand',
  severity: 'medium',
  category: 'commitments',
  title: 'Steady compute paid on demand',
  description: `Compute that ran at least ${steady * 100}% of the hours from its first to its last charge, over ${minCommitmentDays} days or more, was paid at list price, without any commitment discount.`,
  recommendation:
    "Put this steady usage on the connection's unused commitments first; cover the rest with a savings plan or reserved capacity (one year, no upfront).",
  needs: `${minCommitmentDays} days (a full month) of the resource's hourly-priced compute charges, and ListCost.`,
  savings: `Its cost per covered day (first to last seen) times 30.44, less the part its connection's commitments leave unused a month (shared out over the connection's steady on-demand resources, costliest first: that part is commitments-unused's saving, not counted twice), times 30% (a typical one-year no-upfront commitment discount): an estimate. None when the unused commitments can absorb it all. Ranked against scheduling and modernising the same resource.`,
  neverFlags: `Compute already discounted (effective cost under ${onDemand * 100}% of list), resources seen for fewer than ${minCommitmentDays} days, anything costing under ${minMonthly} a month.`,
  // The unused commitment of its connection goes to its steady resources costliest first: a candidate's
  // share depends on every other candidate of the connection, so candidates of a connection whose
  // commitments may leave something unused are judged together at the end of the scan.
  needsWholeScan: (resource, data, now) =>
    candidateOf(resource) !== undefined && mayLeaveUnused(data, resource.connectionId, now),
  resources(data, { currency, now, summary }) {
    const candidates = data.resources
      .flatMap((resource) => {
        const candidate = candidateOf(resource);
        return candidate ? [candidate] : [];
      })
      .sort((a, b) => b.cost - a.cost || a.resource.resourceId.localeCompare(b.resource.resourceId));
    // What the connection's commitments leave unused, handed to its steady resources costliest first.
    const room = unusedCommitmentByConnection(data, summary.unnamedUnused, now);
    const unusedTotal = new Map(room);
    return candidates.map(({ resource, days, hours, running, cost }): RuleResult => {
      const left = room.get(resource.connectionId) ?? 0;
      const absorbed = Math.min(cost, left);
      room.set(resource.connectionId, left - absorbed);
      const beyond = cost - absorbed;
      const savings = beyond > 0.005 ? money(beyond * commitmentDiscount) : undefined;
      const base = `${resource.resourceId} ran ${Math.round(running)} of the ${Math.round(hours)} hours from its first to its last charge at list price (${money(cost)} ${currency} a month).`;
      const unused = unusedTotal.get(resource.connectionId) ?? 0;
      const description =
        unused > 0
          ? `${base} Its connection's commitments leave ${money(unused)} ${currency} a month unused; ${money(absorbed)} ${currency} a month of this usage fits in what is left of it (that saving is the unused commitment's finding, not counted here).`
          : base;
      return {
        ruleId: this.id,
        resourceId: resource.resourceId,
        resourceType: resourceTypeOf(resource),
        severity: this.severity,
        title: this.title,
        description,
        recommendation: recommendationOf(resource, absorbed, beyond, savings, currency),
        ...(savings === undefined
          ? {}
          : { estimatedMonthlySavings: savings, projectedFromDays: projectedDays(days) }),
        currency,
      };
    });
  },
});

/** A resource steady enough and paid on demand enough for a commitment, with what it runs and costs. */
function candidateOf(resource: ScanResource) {
  if (resource.serviceCategory !== 'Compute' || !isHourly(resource)) return undefined;
  const days = coveredDays(resource);
  const hours = days * 24;
  const running = runningHours(resource);
  if (days < minCommitmentDays || running < steady * hours) return undefined;
  if (resource.listCost === null || resource.listCost <= 0) return undefined;
  if (resource.effectiveCost < onDemand * resource.listCost) return undefined;
  const cost = monthlyCostOf(resource);
  if (cost < minMonthly) return undefined;
  return { resource, days, hours, running, cost };
}

function recommendationOf(
  resource: ScanResource,
  absorbed: number,
  beyond: number,
  savings: number | undefined,
  currency: string,
): string {
  const id = resource.resourceId;
  if (absorbed <= 0)
    return `Buy a commitment covering ${id}'s usage: about ${savings} ${currency} a month less (estimate: 30% of its cost).`;
  if (savings === undefined)
    return `Use the existing commitment: put ${id}'s usage on the connection's unused savings plan or reservation (matching region, family and account scope) before buying any new one.`;
  return `Use the existing commitment first for ${money(absorbed)} ${currency} a month of ${id}'s usage; a new commitment covering the other ${money(beyond)} ${currency} a month would save about ${savings} ${currency} a month (estimate: 30% of it).`;
}

import type { Rule } from './types';
import {
  coveredDays,
  isHourly,
  minJudgedDays,
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

/** Compute billed at list price nearly every hour: a commitment would cover it for less. */
export const steadyOnDemand: Rule = {
  id: 'commitments-steady-on-demand',
  severity: 'medium',
  category: 'commitments',
  title: 'Steady compute paid on demand',
  description: `Compute that ran at least ${steady * 100}% of the hours from its first to its last charge, over ${minJudgedDays} days or more, was paid at list price, without any commitment discount.`,
  recommendation: 'Cover this steady usage with a savings plan or reserved capacity (one year, no upfront).',
  needs: `${minJudgedDays} days of the resource's hourly-priced compute charges (one month of data is enough) and ListCost.`,
  savings:
    'Its cost per covered day (first to last seen) times 30.44, times 30% (a typical one-year no-upfront commitment discount): an estimate. Ranked against scheduling and modernising the same resource.',
  neverFlags: `Compute already discounted (effective cost under ${onDemand * 100}% of list), resources seen for fewer than ${minJudgedDays} days, anything costing under ${minMonthly} a month.`,
  evaluate(data, { currency }) {
    return data.resources.flatMap((resource) => {
      if (resource.serviceCategory !== 'Compute' || !isHourly(resource)) return [];
      const days = coveredDays(resource);
      const hours = days * 24;
      const running = runningHours(resource);
      if (days < minJudgedDays || running < steady * hours) return [];
      if (resource.listCost === null || resource.listCost <= 0) return [];
      if (resource.effectiveCost < onDemand * resource.listCost) return [];
      const cost = monthlyCostOf(resource);
      if (cost < minMonthly) return [];
      const savings = money(cost * commitmentDiscount);
      return [
        {
          ruleId: this.id,
          resourceId: resource.resourceId,
          resourceType: resourceTypeOf(resource),
          severity: this.severity,
          title: this.title,
          description: `${resource.resourceId} ran ${Math.round(running)} of the ${Math.round(hours)} hours from its first to its last charge at list price (${money(cost)} ${currency} a month).`,
          recommendation: `Buy a commitment covering ${resource.resourceId}'s usage: about ${savings} ${currency} a month less (estimate: 30% of its cost).`,
          estimatedMonthlySavings: savings,
          projectedFromDays: projectedDays(days),
          currency,
        },
      ];
    });
  },
};

import type { Rule } from './types';
import { isHourly, money, monthly, resourceTypeOf, windowHours } from './window';

/** Running this share of the window's hours is steady enough for a commitment. */
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
  description:
    'Compute that ran at least 80% of the hours of the window was paid at list price, without any commitment discount.',
  recommendation: 'Cover this steady usage with a savings plan or reserved capacity (one year, no upfront).',
  evaluate(data, { currency }) {
    const hours = windowHours(data);
    return data.resources.flatMap((resource) => {
      if (resource.serviceCategory !== 'Compute' || !isHourly(resource)) return [];
      if (resource.hoursSeen < steady * hours || resource.listCost === null || resource.listCost <= 0)
        return [];
      if (resource.effectiveCost < onDemand * resource.listCost) return [];
      const cost = monthly(resource.effectiveCost, data);
      if (cost < minMonthly) return [];
      const savings = money(cost * commitmentDiscount);
      return [
        {
          ruleId: this.id,
          resourceId: resource.resourceId,
          resourceType: resourceTypeOf(resource),
          severity: this.severity,
          title: this.title,
          description: `${resource.resourceId} ran ${resource.hoursSeen} of ${Math.round(hours)} hours at list price (${money(cost)} ${currency} a month).`,
          recommendation: `Buy a commitment covering ${resource.resourceId}'s usage: about ${savings} ${currency} a month less.`,
          estimatedMonthlySavings: savings,
          currency,
        },
      ];
    });
  },
};

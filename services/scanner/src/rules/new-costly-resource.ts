import type { Rule } from './types';
import { daysPerMonth, money, resourceTypeOf } from './window';

const recentDays = 7;
const minMonthly = 100;
/** Share of the connection's monthly spend a new resource must reach to be worth a look. */
const minShare = 0.05;

/** A resource first billed in the last 7 days whose run rate is already a sizeable part of the bill. */
export const newCostlyResource: Rule = {
  id: 'spend-new-costly-resource',
  severity: 'medium',
  category: 'spend',
  title: 'New resource with a high run rate',
  description:
    "A resource first billed in the last 7 days of the window runs at 100 or more a month and at least 5% of its connection's spend.",
  recommendation:
    'Confirm the resource is meant to exist at this size; right-size it or remove it if it was created by mistake or for a test.',
  evaluate(data, { currency }) {
    const end = Date.parse(data.windowEnd);
    const windowDays = (end - Date.parse(data.windowStart)) / 86_400_000;
    if (windowDays <= 2 * recentDays) return [];
    const connectionMonthly = new Map(
      data.totals.map((totals) => [totals.connectionId, (totals.effectiveCost / windowDays) * daysPerMonth]),
    );
    return data.resources.flatMap((resource) => {
      const first = Date.parse(resource.firstSeen);
      if (end - first > recentDays * 86_400_000) return [];
      const activeDays = Math.max(1, (end - first) / 86_400_000);
      const runRate = (resource.effectiveCost / activeDays) * daysPerMonth;
      const threshold = Math.max(minMonthly, minShare * (connectionMonthly.get(resource.connectionId) ?? 0));
      if (runRate < threshold) return [];
      return [
        {
          ruleId: this.id,
          resourceId: resource.resourceId,
          resourceType: resourceTypeOf(resource),
          severity: this.severity,
          title: this.title,
          description: `${resource.resourceId} (${resource.serviceName}) first billed ${resource.firstSeen.slice(0, 10)}, running at ${money(runRate)} ${currency} a month.`,
          recommendation: this.recommendation,
          currency,
        },
      ];
    });
  },
};

import { defineRule } from './define';
import {
  connectionEnd,
  dataDays,
  dataSpan,
  daysPerMonth,
  money,
  projectedDays,
  resourceTypeOf,
} from './window';

const recentDays = 7;
/** Days of charges a new resource needs before its run rate is projected to a month. */
const minDays = 3;
const minMonthly = 100;
/** Share of the connection's monthly spend a new resource must reach to be worth a look. */
const minShare = 0.05;
const dayMs = 86_400_000;

/** A resource first billed in the last 7 days whose run rate is already a sizeable part of the bill. */
export const newCostlyResource = defineRule({
  id: 'spend-new-costly-resource',
  severity: 'medium',
  category: 'spend',
  title: 'New resource with a high run rate',
  description: `A resource first billed in the last ${recentDays} days of its connection's data, with at least ${minDays} days of usage charges, runs at ${minMonthly} or more a month and at least ${minShare * 100}% of its connection's monthly spend.`,
  recommendation:
    'Confirm the resource is meant to exist at this size; right-size it or remove it if it was created by mistake or for a test.',
  needs: `More than ${2 * recentDays} days of data, and ${minDays} days of the new resource's charges (its run rate is projected from them: projected_from_days); "new" is judged against where its connection's usage-based data ends (capped at now), not a tax row dated to the end of the month.`,
  savings: 'none: the run rate is stated, not a saving.',
  neverFlags:
    'Resources whose costliest charge is not usage (one-time purchases, recurring fees, taxes, credits); resources seen on fewer than 3 days.',
  resources(data, { currency, now }) {
    if (dataDays(data) <= 2 * recentDays) return [];
    const { start } = dataSpan(data);
    // Each connection over its own span, to its own data end (usage-based rows, capped at now): a tax
    // row dated to the 1st of next month or another connection's later export neither makes a resource
    // old nor thins the connection's monthly spend.
    const spanOf = (connectionId: string) => (connectionEnd(data, connectionId, now) - start) / dayMs;
    const connectionMonthly = new Map(
      data.totals.map((totals) => [
        totals.connectionId,
        (totals.effectiveCost / Math.max(1, spanOf(totals.connectionId))) * daysPerMonth,
      ]),
    );
    return data.resources.flatMap((resource) => {
      if (resource.chargeCategory !== 'Usage' || resource.daysSeen < minDays) return [];
      if (spanOf(resource.connectionId) <= 2 * recentDays) return [];
      const end = connectionEnd(data, resource.connectionId, now);
      const first = Date.parse(resource.firstSeen);
      if (end - first > recentDays * dayMs) return [];
      const activeDays = Math.max(1, (Math.min(end, Date.parse(resource.lastSeen)) - first) / dayMs);
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
          description: `${resource.resourceId} (${resource.serviceName}) first billed ${resource.firstSeen.slice(0, 10)}: ${money(resource.effectiveCost)} ${currency} over ${money(activeDays)} day${activeDays === 1 ? '' : 's'}, a run rate of ${money(runRate)} ${currency} a month (projected from ${projectedDays(activeDays)} days).`,
          recommendation: this.recommendation,
          projectedFromDays: projectedDays(activeDays),
          currency,
        },
      ];
    });
  },
});

import { defineRule } from './define';
import { byConnection, dailyAverageByMonth, epsilon, lastMonthGrowth } from './monthly-growth';
import { daysPerMonth, money } from './window';

const minGrowth = 0.2;
const minMonthlyIncrease = 10;

/** Storage of a connection costing 20% more per day this month than the month before. */
export const storageGrowth = defineRule({
  id: 'storage-growth-month-over-month',
  severity: 'medium',
  category: 'storage',
  title: 'Storage cost growing month over month',
  description:
    "The daily cost of a connection's storage services (data transfer aside) grew 20% or more over the previous month.",
  recommendation:
    'Add lifecycle rules (expire or move old objects and snapshots to colder tiers) and delete orphaned volumes and snapshots.',
  needs:
    "At least 7 days of data in each of two consecutive calendar months; storage services' daily cost (data transfer aside).",
  savings: 'none: the growth is stated, not a saving.',
  neverFlags: 'Growth under 20% or under 10 a month; a single month of data.',
  project(data, { currency }) {
    return [...byConnection(data.daily)].flatMap(([connectionId, rows]) => {
      const months = dailyAverageByMonth(
        rows.filter((row) => row.serviceCategory === 'Storage'),
        (row) => row.effectiveCost - row.dataTransferCost,
      );
      const change = lastMonthGrowth(months);
      if (!change || change.growth < minGrowth - epsilon) return [];
      const increase = (change.after - change.before) * daysPerMonth;
      if (increase < minMonthlyIncrease) return [];
      return [
        {
          ruleId: this.id,
          resourceId: connectionId,
          resourceType: 'connection',
          severity: this.severity,
          title: this.title,
          description: `Storage cost ${money(change.after)} ${currency} a day in ${change.to}, ${(change.growth * 100).toFixed(0)}% more than in ${change.from} (${money(increase)} ${currency} a month more).`,
          recommendation: this.recommendation,
          // The monthly increase is the later month's daily average against the earlier one's.
          projectedFromDays: months.get(change.to)!.days,
          currency,
        },
      ];
    });
  },
});

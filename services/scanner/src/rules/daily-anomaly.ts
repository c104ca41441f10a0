import { anomaliesOf, filledSeries } from './baseline';
import type { Rule } from './types';
import { money } from './window';

const minExcess = 10;

/** A connection's day that cost far above its trailing 14-day baseline (the latest such day). */
export const dailyCostAnomaly: Rule = {
  id: 'spend-daily-anomaly',
  severity: 'high',
  category: 'spend',
  title: 'Daily spend spike',
  description:
    "A day's spend of a connection rose more than three standard deviations (and 50%) above the mean of the 14 days before it.",
  recommendation:
    'Find the service and resources behind the spike (see spend-service-anomaly) and stop what should not run.',
  evaluate(data, { currency }) {
    const perConnection = new Map<string, Map<string, number>>();
    for (const row of data.daily) {
      const days = perConnection.get(row.connectionId) ?? new Map<string, number>();
      days.set(row.day, (days.get(row.day) ?? 0) + row.effectiveCost);
      perConnection.set(row.connectionId, days);
    }
    const first = data.windowStart.slice(0, 10);
    const last = new Date(Date.parse(data.windowEnd) - 1).toISOString().slice(0, 10);
    return [...perConnection].flatMap(([connectionId, days]) => {
      const latest = anomaliesOf(filledSeries(days, first, last), minExcess).at(-1);
      if (!latest) return [];
      return [
        {
          ruleId: this.id,
          resourceId: connectionId,
          resourceType: 'connection',
          severity: this.severity,
          title: this.title,
          description: `On ${latest.day} the connection spent ${money(latest.cost)} ${currency} against a trailing average of ${money(latest.baseline)} ${currency}.`,
          recommendation: this.recommendation,
          currency,
        },
      ];
    });
  },
};

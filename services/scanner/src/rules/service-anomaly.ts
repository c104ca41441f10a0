import { anomaliesOf, filledSeries } from './baseline';
import type { Rule } from './types';
import { money } from './window';

const minExcess = 10;

/** One service of a connection whose day cost far above its trailing 14-day baseline. */
export const serviceCostAnomaly: Rule = {
  id: 'spend-service-anomaly',
  severity: 'medium',
  category: 'spend',
  title: 'Service spend spike',
  description:
    "A service's daily spend rose more than three standard deviations (and 50%) above the mean of its 14 days before.",
  recommendation:
    "Look at the service's resources created or scaled that day; remove or resize what is not needed.",
  evaluate(data, { currency }) {
    const perService = new Map<
      string,
      { connectionId: string; serviceName: string; days: Map<string, number> }
    >();
    for (const row of data.daily) {
      const id = `${row.connectionId}/${row.serviceName}`;
      const entry = perService.get(id) ?? {
        connectionId: row.connectionId,
        serviceName: row.serviceName,
        days: new Map(),
      };
      entry.days.set(row.day, (entry.days.get(row.day) ?? 0) + row.effectiveCost);
      perService.set(id, entry);
    }
    const first = data.windowStart.slice(0, 10);
    const last = new Date(Date.parse(data.windowEnd) - 1).toISOString().slice(0, 10);
    return [...perService].flatMap(([id, { serviceName, days }]) => {
      const latest = anomaliesOf(filledSeries(days, first, last), minExcess).at(-1);
      if (!latest) return [];
      return [
        {
          ruleId: this.id,
          resourceId: id,
          resourceType: 'service',
          severity: this.severity,
          title: this.title,
          description: `On ${latest.day} ${serviceName || 'an unnamed service'} cost ${money(latest.cost)} ${currency} against a trailing average of ${money(latest.baseline)} ${currency}.`,
          recommendation: this.recommendation,
          currency,
        },
      ];
    });
  },
};

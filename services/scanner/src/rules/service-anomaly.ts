import { defineRule } from './define';
import {
  anomaliesOf,
  anomalySeverity,
  coveredDaysOf,
  minDeviations,
  minHistoryDays,
  minRelativeJump,
  seriesFrom,
  usageSeries,
} from './baseline';
import { money } from './window';

/** One service of a connection whose day of usage-based spend is far above its trailing baseline. */
export const serviceCostAnomaly = defineRule({
  id: 'spend-service-anomaly',
  severity: 'high',
  category: 'spend',
  title: 'Service spend spike',
  description: `A service's daily usage-based spend rose more than ${minDeviations} standard deviations, ${minRelativeJump * 100}% and the team's minimum daily impact above the mean of its ${minHistoryDays} days before. Severity: high from ten times the minimum impact and a doubled day, medium from three times, else low.`,
  recommendation:
    "Look at the service's resources created or scaled that day; remove or resize what is not needed.",
  needs: `${minHistoryDays} days of the service's own usage-based spend before the day judged, counted from its first day with cost (a new service cannot spike on its first days) and only over days the connection's data covers (a month without an upload is no zeros).`,
  savings: 'none: a spike is a cost already incurred.',
  neverFlags:
    "Recurring fees (a monthly charge on the 1st), one-time purchases, taxes, credits and adjustments; a service's first 14 days; a rise below the team's minimum daily impact (default 50 USD in the data's currency, converted).",
  project(data, { currency, minDailyImpact }) {
    const covered = new Map(
      [...usageSeries(data.daily, (row) => row.connectionId)].map(([connectionId, { rows }]) => [
        connectionId,
        coveredDaysOf(rows),
      ]),
    );
    const series = usageSeries(data.daily, (row) => `${row.connectionId}/${row.serviceName}`);
    return [...series].flatMap(([id, { rows, days }]) => {
      const points = seriesFrom(days, covered.get(rows[0]!.connectionId) ?? []);
      const latest = anomaliesOf(points, { minExcess: minDailyImpact }).at(-1);
      if (!latest) return [];
      const serviceName = rows[0]!.serviceName;
      const excess = latest.cost - latest.baseline;
      const relative = latest.baseline > 0 ? ` (+${Math.round((excess / latest.baseline) * 100)}%)` : '';
      return [
        {
          ruleId: this.id,
          resourceId: id,
          resourceType: 'service',
          severity: anomalySeverity(latest, minDailyImpact),
          title: this.title,
          description: `On ${latest.day} ${serviceName || 'an unnamed service'} cost ${money(latest.cost)} ${currency} in usage-based charges, ${money(excess)} ${currency} above its average of ${money(latest.baseline)} ${currency} over the ${latest.baselineDays} days of data before${relative}.`,
          recommendation: this.recommendation,
          currency,
        },
      ];
    });
  },
});

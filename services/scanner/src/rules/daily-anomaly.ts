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
  type Anomaly,
} from './baseline';
import { money } from './window';

/**
 * The latest spike of a connection, judged on each day its data covers (`covered`, sorted) over the
 * services it had through the whole baseline (first usage at least `minHistoryDays` covered days before):
 * a service starting mid-window is not a spike of the connection (spend-new-costly-resource and the
 * service's own series judge it later). Days the data does not cover are no part of any baseline.
 */
function latestSpike(
  services: { days: Map<string, number> }[],
  covered: string[],
  minExcess: number,
): Anomaly | undefined {
  const firsts = services.map(({ days }) => seriesFrom(days, covered)[0]?.day);
  for (let index = covered.length - 1; index >= minHistoryDays; index--) {
    const cutoff = covered[index - minHistoryDays]!;
    const established = services.filter((_, at) => firsts[at] !== undefined && firsts[at]! <= cutoff);
    const series = covered.slice(index - minHistoryDays, index + 1).map((day) => ({
      day,
      cost: established.reduce((sum, { days }) => sum + (days.get(day) ?? 0), 0),
    }));
    const found = anomaliesOf(series, { minExcess }).find((anomaly) => anomaly.day === covered[index]);
    if (found) return found;
  }
  return undefined;
}

/** A connection's day of usage-based spend far above its trailing 14-day baseline (the latest such day). */
export const dailyCostAnomaly = defineRule({
  id: 'spend-daily-anomaly',
  severity: 'high',
  category: 'spend',
  title: 'Daily spend spike',
  description: `A day's usage-based spend of a connection rose more than ${minDeviations} standard deviations, ${minRelativeJump * 100}% and the team's minimum daily impact above the mean of the ${minHistoryDays} days before it, counting the services it had through those days. Severity: high from ten times the minimum impact and a doubled day, medium from three times, else low.`,
  recommendation:
    'Find the service and resources behind the spike (see spend-service-anomaly) and stop what should not run.',
  needs: `${minHistoryDays} days of usage-based spend before the day judged, of each service counted; only days the connection's data covers count (days before its data begins and a month without an upload are not zeros).`,
  savings: 'none: a spike is a cost already incurred.',
  neverFlags: `Recurring fees, one-time purchases, taxes, credits and adjustments (only usage-based charges form the series); a connection's first ${minHistoryDays} days; a service's first ${minHistoryDays} days (a new service is not a spike of its connection); a rise below the team's minimum daily impact (default 50 USD in the data's currency, converted).`,
  project(data, { currency, minDailyImpact }) {
    const connections = usageSeries(data.daily, (row) => row.connectionId);
    return [...connections].flatMap(([connectionId, { rows }]) => {
      const services = [...usageSeries(rows, (row) => row.serviceName).values()];
      const latest = latestSpike(services, coveredDaysOf(rows), minDailyImpact);
      if (!latest) return [];
      const excess = latest.cost - latest.baseline;
      const relative = latest.baseline > 0 ? ` (+${Math.round((excess / latest.baseline) * 100)}%)` : '';
      return [
        {
          ruleId: this.id,
          resourceId: connectionId,
          resourceType: 'connection',
          severity: anomalySeverity(latest, minDailyImpact),
          title: this.title,
          description: `On ${latest.day} the connection's usage-based spend was ${money(latest.cost)} ${currency}, ${money(excess)} ${currency} above its average of ${money(latest.baseline)} ${currency} over the ${latest.baselineDays} days of data before${relative}.`,
          recommendation: this.recommendation,
          currency,
        },
      ];
    });
  },
});

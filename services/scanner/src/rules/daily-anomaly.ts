import {
  anomaliesOf,
  anomalySeverity,
  lastDayOf,
  minDeviations,
  minHistoryDays,
  minRelativeJump,
  seriesFrom,
  usageSeries,
  type Anomaly,
} from './baseline';
import type { Rule } from './types';
import { dataSpan, money } from './window';

const dayMs = 86_400_000;
const dayOf = (at: number) => new Date(at).toISOString().slice(0, 10);

/**
 * The latest spike of a connection, judged on each day over the services it had through the whole
 * baseline (first usage at least `minHistoryDays` days before): a service starting mid-window is not a
 * spike of the connection (spend-new-costly-resource and the service's own series judge it later).
 */
function latestSpike(
  services: { days: Map<string, number> }[],
  last: string,
  minExcess: number,
): Anomaly | undefined {
  const firsts = services.map(({ days }) => seriesFrom(days, last)[0]?.day);
  const starts = firsts.filter((day): day is string => !!day).sort();
  if (starts.length === 0) return undefined;
  const end = Date.parse(`${last}T00:00:00Z`);
  for (let at = end; at >= Date.parse(`${starts[0]}T00:00:00Z`) + minHistoryDays * dayMs; at -= dayMs) {
    const cutoff = dayOf(at - minHistoryDays * dayMs);
    const established = services.filter((_, index) => firsts[index] && firsts[index]! <= cutoff);
    const series = [];
    for (let day = at - minHistoryDays * dayMs; day <= at; day += dayMs)
      series.push({
        day: dayOf(day),
        cost: established.reduce((sum, { days }) => sum + (days.get(dayOf(day)) ?? 0), 0),
      });
    const found = anomaliesOf(series, { minExcess }).find((anomaly) => anomaly.day === dayOf(at));
    if (found) return found;
  }
  return undefined;
}

/** A connection's day of usage-based spend far above its trailing 14-day baseline (the latest such day). */
export const dailyCostAnomaly: Rule = {
  id: 'spend-daily-anomaly',
  severity: 'high',
  category: 'spend',
  title: 'Daily spend spike',
  description: `A day's usage-based spend of a connection rose more than ${minDeviations} standard deviations, ${minRelativeJump * 100}% and the team's minimum daily impact above the mean of the ${minHistoryDays} days before it, counting the services it had through those days. Severity: high from ten times the minimum impact and a doubled day, medium from three times, else low.`,
  recommendation:
    'Find the service and resources behind the spike (see spend-service-anomaly) and stop what should not run.',
  needs: `${minHistoryDays} days of usage-based spend before the day judged, of each service counted (days before its data begins are not counted as zero).`,
  savings: 'none: a spike is a cost already incurred.',
  neverFlags: `Recurring fees, one-time purchases, taxes, credits and adjustments (only usage-based charges form the series); a connection's first ${minHistoryDays} days; a service's first ${minHistoryDays} days (a new service is not a spike of its connection); a rise below the team's minimum daily impact (default 50 in the data's currency).`,
  evaluate(data, { currency, minDailyImpact }) {
    const last = lastDayOf(dataSpan(data).end);
    const connections = usageSeries(data.daily, (row) => row.connectionId);
    return [...connections].flatMap(([connectionId, { rows }]) => {
      const services = [...usageSeries(rows, (row) => row.serviceName).values()];
      const latest = latestSpike(services, last, minDailyImpact);
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
          description: `On ${latest.day} the connection's usage-based spend was ${money(latest.cost)} ${currency}, ${money(excess)} ${currency} above its average of ${money(latest.baseline)} ${currency} over the ${latest.baselineDays} days before${relative}.`,
          recommendation: this.recommendation,
          currency,
        },
      ];
    });
  },
};

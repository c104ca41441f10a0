import type { DailyServiceCost } from './types';

/** A day whose usage-based cost stands out from the days of its series before it. */
export interface Anomaly {
  day: string;
  cost: number;
  /** Mean of the trailing days. */
  baseline: number;
  /** Days the baseline was computed over. */
  baselineDays: number;
}

/** Days of a series' own history an anomaly needs before it can fire (and the baseline's length). */
export const minHistoryDays = 14;
/** A day must exceed its baseline by at least this share (0.5 = 50% above the mean) ... */
export const minRelativeJump = 0.5;
/** ... and by this many standard deviations of the baseline days. */
export const minDeviations = 3;

export interface AnomalyThresholds {
  /** Least excess over the baseline, in money, worth a finding (the team's minimum daily impact). */
  minExcess: number;
}

/**
 * Days of a daily series (sorted by day) whose cost exceeds the mean of the `minHistoryDays` days before
 * it by `minDeviations` standard deviations, by `minRelativeJump` of the mean and by `minExcess` in money.
 * The series holds only days the data covers (`seriesFrom`): it starts on its own first day with a cost,
 * so the days before a service existed and the days of a month never uploaded are not zeros; a day needs
 * `minHistoryDays` covered days of the series before it.
 */
export function anomaliesOf(
  series: { day: string; cost: number }[],
  { minExcess }: AnomalyThresholds,
): Anomaly[] {
  const found: Anomaly[] = [];
  for (let index = minHistoryDays; index < series.length; index++) {
    const trailing = series.slice(index - minHistoryDays, index).map((point) => point.cost);
    const mean = trailing.reduce((sum, cost) => sum + cost, 0) / trailing.length;
    const variance = trailing.reduce((sum, cost) => sum + (cost - mean) ** 2, 0) / trailing.length;
    const { day, cost } = series[index]!;
    if (
      cost > mean + minDeviations * Math.sqrt(variance) &&
      cost >= mean * (1 + minRelativeJump) &&
      cost - mean >= minExcess
    )
      found.push({ day, cost, baseline: mean, baselineDays: trailing.length });
  }
  return found;
}

/**
 * The days (YYYY-MM-DD, sorted) a connection's data covers: the days any of its services had
 * usage-based cost. A day without such a row (a month whose export was never uploaded, a day before the
 * first upload) is not covered: it is no zero in a baseline, it is no point of any series.
 */
export function coveredDaysOf(rows: DailyServiceCost[]): string[] {
  return [...new Set(rows.filter((row) => row.usageCost !== 0).map((row) => row.day))].sort();
}

/**
 * A series over the covered days (`covered`, sorted) from its own first day with usage-based cost: 0 on
 * a covered day it had no cost (a real zero: the data is there), no point where the data covers nothing.
 */
export function seriesFrom(costs: Map<string, number>, covered: string[]): { day: string; cost: number }[] {
  const days = [...costs].filter(([, cost]) => cost !== 0).map(([day]) => day);
  if (days.length === 0) return [];
  const first = days.sort()[0]!;
  return covered.filter((day) => day >= first).map((day) => ({ day, cost: costs.get(day) ?? 0 }));
}

/** The usage-based daily series of `rows`, grouped by `key`. */
export function usageSeries(
  rows: DailyServiceCost[],
  key: (row: DailyServiceCost) => string,
): Map<string, { rows: DailyServiceCost[]; days: Map<string, number> }> {
  const groups = new Map<string, { rows: DailyServiceCost[]; days: Map<string, number> }>();
  for (const row of rows) {
    const id = key(row);
    const group = groups.get(id) ?? { rows: [], days: new Map<string, number>() };
    group.rows.push(row);
    group.days.set(row.day, (group.days.get(row.day) ?? 0) + row.usageCost);
    groups.set(id, group);
  }
  return groups;
}

/**
 * Severity from money and size together: `high` when the excess is at least ten times the minimum daily
 * impact and the day at least doubled its baseline, `medium` at three times the minimum, else `low`.
 */
export function anomalySeverity(anomaly: Anomaly, minExcess: number): 'low' | 'medium' | 'high' {
  const excess = anomaly.cost - anomaly.baseline;
  const relative = anomaly.baseline > 0 ? excess / anomaly.baseline : Infinity;
  if (excess >= 10 * minExcess && relative >= 1) return 'high';
  if (excess >= 3 * minExcess) return 'medium';
  return 'low';
}

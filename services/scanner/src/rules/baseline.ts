/** A day whose cost stands out from the days before it. */
export interface Anomaly {
  day: string;
  cost: number;
  baseline: number;
}

const trailingDays = 14;
const minBaselineDays = 7;

/**
 * Days of a daily series (sorted by day, missing days are no cost) whose cost exceeds the mean of the
 * trailing 14 days by three standard deviations, by half the mean, and by `minExcess` in money.
 */
export function anomaliesOf(series: { day: string; cost: number }[], minExcess: number): Anomaly[] {
  const found: Anomaly[] = [];
  for (let index = minBaselineDays; index < series.length; index++) {
    const trailing = series.slice(Math.max(0, index - trailingDays), index).map((point) => point.cost);
    const mean = trailing.reduce((sum, cost) => sum + cost, 0) / trailing.length;
    const variance = trailing.reduce((sum, cost) => sum + (cost - mean) ** 2, 0) / trailing.length;
    const { day, cost } = series[index]!;
    if (cost > mean + 3 * Math.sqrt(variance) && cost > mean * 1.5 && cost - mean >= minExcess)
      found.push({ day, cost, baseline: mean });
  }
  return found;
}

/** Every UTC day from `first` to `last` (YYYY-MM-DD, both included) with its cost, 0 where none. */
export function filledSeries(
  costs: Map<string, number>,
  first: string,
  last: string,
): { day: string; cost: number }[] {
  const series = [];
  for (let at = Date.parse(`${first}T00:00:00Z`); at <= Date.parse(`${last}T00:00:00Z`); at += 86_400_000) {
    const day = new Date(at).toISOString().slice(0, 10);
    series.push({ day, cost: costs.get(day) ?? 0 });
  }
  return series;
}

import type { DailyServiceCost } from './types';

/** Ratios of sums of doubles are not exact (12 / 10 - 1 < 0.2): thresholds allow this much. */
export const epsilon = 1e-9;

/** Cost per day with data, per calendar month (YYYY-MM), of the rows `pick` measures. */
export function dailyAverageByMonth(
  rows: DailyServiceCost[],
  pick: (row: DailyServiceCost) => number,
): Map<string, { perDay: number; days: number }> {
  const months = new Map<string, { cost: number; days: Set<string> }>();
  for (const row of rows) {
    const month = row.day.slice(0, 7);
    const entry = months.get(month) ?? { cost: 0, days: new Set<string>() };
    entry.cost += pick(row);
    entry.days.add(row.day);
    months.set(month, entry);
  }
  return new Map(
    [...months].map(([month, { cost, days }]) => [month, { perDay: cost / days.size, days: days.size }]),
  );
}

/**
 * Growth of the last month over the one before (0.25 = +25%), both with at least `minDays` days of data;
 * undefined when there are not two such consecutive months or the earlier one cost nothing.
 */
export function lastMonthGrowth(
  months: Map<string, { perDay: number; days: number }>,
  minDays = 7,
): { growth: number; from: string; to: string; before: number; after: number } | undefined {
  const sorted = [...months.keys()].filter((month) => months.get(month)!.days >= minDays).sort();
  if (sorted.length < 2) return undefined;
  const to = sorted[sorted.length - 1]!;
  const from = sorted[sorted.length - 2]!;
  const before = months.get(from)!.perDay;
  const after = months.get(to)!.perDay;
  if (before <= 0) return undefined;
  return { growth: after / before - 1, from, to, before, after };
}

/** Rows grouped by connection. */
export function byConnection(rows: DailyServiceCost[]): Map<string, DailyServiceCost[]> {
  const groups = new Map<string, DailyServiceCost[]>();
  for (const row of rows) {
    const group = groups.get(row.connectionId);
    if (group) group.push(row);
    else groups.set(row.connectionId, [row]);
  }
  return groups;
}

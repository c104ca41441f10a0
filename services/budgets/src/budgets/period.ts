/** Calendar periods in UTC: a budget's spend is counted from `start` (inclusive) to `end` (exclusive). */
export const budgetPeriods = ['monthly', 'quarterly', 'yearly'] as const;
export type BudgetPeriod = (typeof budgetPeriods)[number];

export interface PeriodRange {
  start: Date;
  end: Date;
}

const monthsIn: Record<BudgetPeriod, number> = { monthly: 1, quarterly: 3, yearly: 12 };

/** The calendar period of kind `period` that contains `at`. */
export function periodOf(period: BudgetPeriod, at: Date): PeriodRange {
  const months = monthsIn[period];
  const year = at.getUTCFullYear();
  const firstMonth = Math.floor(at.getUTCMonth() / months) * months;
  // Date.UTC rolls month 12 over into January of the next year.
  return {
    start: new Date(Date.UTC(year, firstMonth, 1)),
    end: new Date(Date.UTC(year, firstMonth + months, 1)),
  };
}

/** YYYY-MM-DD of a UTC midnight, as events and the database carry period bounds. */
export const dayOf = (at: Date): string => at.toISOString().slice(0, 10);

const dayMs = 86_400_000;

/** What a forecast starts from: the period's spend so far and how much of it follows usage. */
export interface SpendSoFar {
  /** All spend counted in the period. */
  spend: number;
  /** Of `spend`: usage-based charges, projected at their run rate. */
  usage: number;
  /** YYYY-MM-DD of the latest charge day with usage-based spend, null when none. */
  lastUsageDay: string | null;
}

/**
 * Spend at the end of the period: the usage-based part at its linear run rate (divided by the part of
 * the period it covers, times the whole period), plus the rest (recurring fees, one-time purchases,
 * taxes, credits, adjustments) once, as booked: a whole-month fee charged on the 1st is not multiplied.
 * The covered part ends with the latest usage day in the period (FOCUS exports arrive a day or more late,
 * so dividing by the time elapsed until now would understate the rate); without such a day it ends at
 * `now`. A period that is over, or not begun, forecasts its spend.
 */
export function forecastSpend(
  { spend, usage, lastUsageDay }: SpendSoFar,
  range: PeriodRange,
  now: Date,
): number {
  const usageDayEnd = lastUsageDay ? Date.parse(`${lastUsageDay}T00:00:00Z`) + dayMs : NaN;
  const inPeriod = usageDayEnd > range.start.getTime() && usageDayEnd <= range.end.getTime();
  const coveredUntil = inPeriod ? usageDayEnd : Math.min(now.getTime(), range.end.getTime());
  const covered = coveredUntil - range.start.getTime();
  if (covered <= 0) return roundCents(spend);
  const projected = (usage * (range.end.getTime() - range.start.getTime())) / covered;
  return roundCents(projected + (spend - usage));
}

/** The UTC midnight that ends `day` (YYYY-MM-DD), null for none: how far a budget's data reaches. */
export const endOfDay = (day: string | null): Date | null =>
  day ? new Date(Date.parse(`${day}T00:00:00Z`) + dayMs) : null;

/** Share of `amount` that `spend` is, in percent with two decimals: the figure thresholds compare with. */
export const percentageUsed = (spend: number, amount: number): number =>
  amount > 0 ? Math.round((spend / amount) * 10_000) / 100 : 0;

const roundCents = (value: number) => Math.round(value * 100) / 100;

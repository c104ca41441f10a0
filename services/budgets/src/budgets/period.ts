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

/**
 * Linear run rate to the end of the period: spend so far divided by the part of the period it covers,
 * times the whole period. The covered part ends with the last charge day that has data in the period
 * (FOCUS exports arrive a day or more late, so dividing by the time elapsed until now would understate the
 * rate); without such a day it ends at `now`. A period that is over, or not begun, forecasts its spend.
 */
export function forecastSpend(
  spend: number,
  range: PeriodRange,
  lastChargeDay: string | null,
  now: Date,
): number {
  const chargeDayEnd = lastChargeDay ? Date.parse(`${lastChargeDay}T00:00:00Z`) + dayMs : NaN;
  const inPeriod = chargeDayEnd > range.start.getTime() && chargeDayEnd <= range.end.getTime();
  const coveredUntil = inPeriod ? chargeDayEnd : Math.min(now.getTime(), range.end.getTime());
  const covered = coveredUntil - range.start.getTime();
  if (covered <= 0) return roundCents(spend);
  return roundCents((spend * (range.end.getTime() - range.start.getTime())) / covered);
}

/** Share of `amount` that `spend` is, in percent with two decimals: the figure thresholds compare with. */
export const percentageUsed = (spend: number, amount: number): number =>
  amount > 0 ? Math.round((spend / amount) * 10_000) / 100 : 0;

const roundCents = (value: number) => Math.round(value * 100) / 100;

import type { Threshold } from './evaluation';
import { endOfDay, forecastSpend, periodOf, type BudgetPeriod } from './period';
import type { CurrencyAmount } from './spend';
import type { BudgetStatus } from './validation';

/** A budget as the API shows it: the stored definition and what its last evaluation found. */
export interface Budget {
  id: string;
  teamId: string;
  projectId: string;
  name: string;
  amount: number;
  currency: string;
  period: BudgetPeriod;
  status: BudgetStatus;
  thresholds: Threshold[];
  tags: Record<string, string>;
  currentSpend: number;
  percentageUsed: number;
  forecastSpend: number;
  unconvertedSpend: CurrencyAmount[];
  /** End of the latest charge day counted in `currentSpend`; null when none. */
  dataThrough: Date | null;
  /** The period the spend belongs to (end exclusive). */
  periodStart: Date;
  periodEnd: Date;
  evaluatedAt: Date | null;
  createdAt: Date;
  updatedAt: Date;
}

export interface StoredThreshold {
  percentage: number;
  notified_at: string | null;
}

export interface BudgetRow {
  id: string;
  team_id: string;
  project_id: string;
  name: string;
  amount: number;
  currency: string;
  period: BudgetPeriod;
  status: BudgetStatus;
  thresholds: StoredThreshold[];
  tags: Record<string, string>;
  current_spend: number;
  percentage_used: number;
  unconverted_spend: CurrencyAmount[];
  last_charge_day: string | null;
  usage_spend: number;
  last_usage_day: string | null;
  period_start: Date | null;
  evaluated_at: Date | null;
  created_at: Date;
  updated_at: Date;
}

export const budgetColumns = `b.id, b.team_id, b.project_id, b.name, b.amount, b.currency, b.period, b.status,
  b.thresholds, b.tags, b.current_spend, b.percentage_used, b.unconverted_spend,
  to_char(b.last_charge_day, 'YYYY-MM-DD') AS last_charge_day, b.usage_spend,
  to_char(b.last_usage_day, 'YYYY-MM-DD') AS last_usage_day, b.period_start, b.evaluated_at,
  b.created_at, b.updated_at`;

export const thresholdsOf = (stored: StoredThreshold[]): Threshold[] =>
  stored.map((t) => ({
    percentage: t.percentage,
    notifiedAt: t.notified_at ? new Date(t.notified_at) : null,
  }));

export const storedThresholds = (thresholds: Threshold[]): string =>
  JSON.stringify(
    thresholds.map((t) => ({ percentage: t.percentage, notified_at: t.notifiedAt?.toISOString() ?? null })),
  );

/** The row as the API shows it at `now`: the forecast runs to the end of the evaluated period. */
export function toBudget(row: BudgetRow, now: Date): Budget {
  const range = row.period_start
    ? { start: row.period_start, end: periodOf(row.period, row.period_start).end }
    : periodOf(row.period, now);
  return {
    id: row.id,
    teamId: row.team_id,
    projectId: row.project_id,
    name: row.name,
    amount: row.amount,
    currency: row.currency,
    period: row.period,
    status: row.status,
    thresholds: thresholdsOf(row.thresholds),
    tags: row.tags,
    currentSpend: row.current_spend,
    percentageUsed: row.percentage_used,
    forecastSpend: forecastSpend(
      { spend: row.current_spend, usage: row.usage_spend, lastUsageDay: row.last_usage_day },
      range,
      now,
    ),
    unconvertedSpend: row.unconverted_spend,
    dataThrough: endOfDay(row.last_charge_day),
    periodStart: range.start,
    periodEnd: range.end,
    evaluatedAt: row.evaluated_at,
    createdAt: row.created_at,
    updatedAt: row.updated_at,
  };
}

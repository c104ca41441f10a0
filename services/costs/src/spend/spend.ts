import type { costs } from '@costgov/contracts';
import type { Queryable } from '@costgov/db';
import { textProblem, ValidationError, Violations } from '@costgov/errors';
import { looksLikeId } from '@costgov/ids';
import { isCurrencyCode } from '../rates/currency-codes';
import { multipliersInto } from './conversion';
import { dayRangeOf } from './day-range';

/** A request as the proto declares it, with or without the message's type marker. */
type RequestOf<T> = Omit<T, '$typeName' | '$unknown'>;

export type SpendRequest = RequestOf<costs.GetSpendRequest>;
export type DailySpendRequest = RequestOf<costs.GetDailySpendRequest>;
export type TagCoverageRequest = RequestOf<costs.GetTagCoverageRequest>;

export interface CurrencyAmount {
  currency: string;
  amount: number;
}

/** GetSpendResponse's fields, all present (`dataThrough` null when nothing is counted). */
export interface Spend {
  byCurrency: CurrencyAmount[];
  converted: number;
  unconverted: CurrencyAmount[];
  lastChargeDay: string;
  /** Of `converted`: the usage-based part (the rollups' `usage_based`). */
  usageConverted: number;
  /** The latest charge day with usage-based spend, '' when none. */
  lastUsageDay: string;
  /** End of `lastChargeDay` (the UTC midnight after it), null when none. */
  dataThrough: Date | null;
}

export interface DailySpend {
  day: string;
  currency: string;
  effectiveCost: number;
  billedCost: number;
  usageCost: number;
}

const dayMs = 86_400_000;
const endOfDay = (day: string): Date | null =>
  day ? new Date(Date.parse(`${day}T00:00:00Z`) + dayMs) : null;

export interface TagCoverage {
  covered: CurrencyAmount[];
  total: CurrencyAmount[];
  untaggable: CurrencyAmount[];
  ratio: number;
}

/**
 * A tag key as compared for coverage, in SQL: lower case without `-`, `_` and whitespace, the scanner's
 * tagKeyOf (services/scanner/src/rules/spelling.ts), so `environment` covers a required `Environment`.
 */
const tagKeySql = (key: string) => `regexp_replace(lower(${key}), '[-_[:space:]]+', '', 'g')`;

// Sums of doubles carry binary noise (0.1 + 0.2); 15 significant digits is what a double holds exactly.
const clean = (value: number): number => Number.parseFloat(value.toPrecision(15));

/**
 * The team's rollup rows of the given connections and days, narrowed to records carrying every given
 * tag: the WHERE clause every query here shares, and its parameters ($1..$n).
 */
function scopeOf(
  teamId: string,
  request: { connectionIds: string[]; from?: SpendRequest['from']; to?: SpendRequest['to'] },
  tags: Record<string, string> = {},
) {
  const { firstDay, endDay } = dayRangeOf(request.from, request.to);
  const violations = new Violations();
  for (const [key, value] of Object.entries(tags)) {
    const problem = textProblem(key) ?? textProblem(value);
    if (problem) violations.add(`tags.${key}`, problem);
  }
  violations.throwIfAny();
  // Ids of another shape can match nothing; leaving them out keeps text Postgres refuses away from it.
  const connectionIds = request.connectionIds.filter((id) => looksLikeId('connection', id));
  const params: unknown[] = [teamId, connectionIds, firstDay, endDay];
  // Only connections that exist: a deleted one's data stops counting with its row, before its purge.
  let where = `team_id = $1 AND day >= $3::date AND day < $4::date AND connection_id = ANY (ARRAY(
    SELECT id FROM connections WHERE team_id = $1 AND id = ANY ($2::text[])))`;
  if (Object.keys(tags).length > 0) where += ` AND tags @> $${params.push(JSON.stringify(tags))}::jsonb`;
  return { where, params, empty: connectionIds.length === 0 || firstDay >= endDay };
}

/**
 * Spend read from the daily rollup, never from raw rows: `daily_spend`, the rows of each billing period
 * summed per day, currency, tag set and usage-based flag at upload, so a month is a few thousand rows
 * (a day that two periods charge has a row for each, summed here like the rest). The
 * measure is FOCUS `EffectiveCost` (amortized, after discounts and credits: what the team really
 * pays), which budgets use.
 */
export function spendQueries({ db }: { db: Queryable }) {
  /**
   * EffectiveCost per billing currency; with `currency`, the sum converted into it (direct rate, else
   * the inverse of the reverse one) and what had no rate apart in `unconverted`. `lastChargeDay` is the
   * latest day among the records counted (same range and tags), `dataThrough` its end; the usage-based
   * part and its latest day are what run-rate forecasts project.
   */
  async function getSpend(teamId: string, request: SpendRequest): Promise<Spend> {
    const target = request.currency;
    if (target !== undefined && !isCurrencyCode(target))
      throw new ValidationError([{ field: 'currency', message: 'must be an ISO 4217 currency code' }]);
    const scope = scopeOf(teamId, request, request.tags);
    const none = { converted: 0, unconverted: [], usageConverted: 0 };
    if (scope.empty)
      return { byCurrency: [], ...none, lastChargeDay: '', lastUsageDay: '', dataThrough: null };
    const { rows } = await db.query<{
      currency: string;
      amount: number;
      usage: number;
      last_day: string;
      last_usage_day: string | null;
    }>(
      `SELECT billing_currency AS currency, sum(effective_cost) AS amount,
         coalesce(sum(effective_cost) FILTER (WHERE usage_based), 0) AS usage,
         to_char(max(day), 'YYYY-MM-DD') AS last_day,
         to_char(max(day) FILTER (WHERE usage_based), 'YYYY-MM-DD') AS last_usage_day
       FROM daily_spend WHERE ${scope.where} GROUP BY billing_currency ORDER BY billing_currency`,
      scope.params,
    );
    const byCurrency = rows.map((row) => ({ currency: row.currency, amount: row.amount }));
    const latest = (days: (string | null)[]) =>
      days.reduce<string>((last, day) => (day && day > last ? day : last), '');
    const lastChargeDay = latest(rows.map((row) => row.last_day));
    const lastUsageDay = latest(rows.map((row) => row.last_usage_day));
    const found = { lastChargeDay, lastUsageDay, dataThrough: endOfDay(lastChargeDay) };
    if (target === undefined) return { byCurrency, ...none, ...found };
    const multipliers = await multipliersInto(
      db,
      target,
      rows.map((row) => row.currency),
    );
    let converted = 0;
    let usageConverted = 0;
    const unconverted: CurrencyAmount[] = [];
    for (const row of rows) {
      const multiplier = multipliers.get(row.currency);
      if (multiplier === undefined) unconverted.push({ currency: row.currency, amount: row.amount });
      else {
        converted += row.amount * multiplier;
        usageConverted += row.usage * multiplier;
      }
    }
    return {
      byCurrency,
      converted: clean(converted),
      unconverted,
      usageConverted: clean(usageConverted),
      ...found,
    };
  }

  async function getDailySpend(teamId: string, request: DailySpendRequest): Promise<{ days: DailySpend[] }> {
    const scope = scopeOf(teamId, request, request.tags);
    if (scope.empty) return { days: [] };
    const { rows } = await db.query<{
      day: string;
      currency: string;
      effective: number;
      billed: number;
      usage: number;
    }>(
      `SELECT to_char(day, 'YYYY-MM-DD') AS day, billing_currency AS currency,
         sum(effective_cost) AS effective, sum(billed_cost) AS billed,
         coalesce(sum(effective_cost) FILTER (WHERE usage_based), 0) AS usage
       FROM daily_spend WHERE ${scope.where} GROUP BY day, billing_currency ORDER BY day, billing_currency`,
      scope.params,
    );
    return {
      days: rows.map((row) => ({
        day: row.day,
        currency: row.currency,
        effectiveCost: row.effective,
        billedCost: row.billed,
        usageCost: row.usage,
      })),
    };
  }

  /**
   * EffectiveCost carrying every required tag key (compared whatever their case and `-`, `_` or
   * whitespace) with a non-blank value, against all the EffectiveCost that can carry tags, per
   * currency. The ratio weighs currencies in the one with the most cost, converted with the operator's
   * rates where one exists and at face value otherwise; it is 1 when there is no (positive) cost.
   */
  async function getTagCoverage(teamId: string, request: TagCoverageRequest): Promise<TagCoverage> {
    const violations = new Violations();
    request.requiredTags.forEach((key, index) => {
      const problem = textProblem(key);
      if (problem) violations.add(`required_tags[${index}]`, problem);
    });
    violations.throwIfAny();
    const scope = scopeOf(teamId, request);
    if (scope.empty) return { covered: [], total: [], untaggable: [], ratio: 1 };
    const keys = scope.params.push([...new Set(request.requiredTags)]);
    // Every required key has a tag whose key matches it as the scanner's rules match (tagKeyOf: case,
    // `-`, `_` and whitespace aside) and whose value is not blank.
    // Spend that cannot carry tags (untaggable_cost: no ResourceId, or ChargeCategory Tax, Credit,
    // Purchase, Adjustment) is neither covered nor counted: answered apart.
    const { rows } = await db.query<{ currency: string; covered: number; total: number; untaggable: number }>(
      `SELECT billing_currency AS currency, sum(effective_cost - untaggable_cost) AS total,
         sum(untaggable_cost) AS untaggable,
         coalesce(sum(effective_cost - untaggable_cost) FILTER (WHERE NOT EXISTS (
           SELECT 1 FROM unnest($${keys}::text[]) AS required (key) WHERE NOT EXISTS (
             SELECT 1 FROM jsonb_each_text(CASE WHEN jsonb_typeof(tags) = 'object' THEN tags ELSE '{}' END)
               AS tag (key, value)
             WHERE ${tagKeySql('tag.key')} = ${tagKeySql('required.key')} AND tag.value ~ '[^[:space:]]'))), 0) AS covered
       FROM daily_spend WHERE ${scope.where} GROUP BY billing_currency ORDER BY billing_currency`,
      scope.params,
    );
    const covered = rows.map((row) => ({ currency: row.currency, amount: row.covered }));
    const total = rows.map((row) => ({ currency: row.currency, amount: row.total }));
    const untaggable = rows.map((row) => ({ currency: row.currency, amount: row.untaggable }));
    if (rows.length === 0) return { covered, total, untaggable, ratio: 1 };
    const reference = rows.reduce((most, row) => (row.total > most.total ? row : most)).currency;
    const multipliers = await multipliersInto(
      db,
      reference,
      rows.map((row) => row.currency),
    );
    let coveredSum = 0;
    let totalSum = 0;
    for (const row of rows) {
      const multiplier = multipliers.get(row.currency) ?? 1;
      coveredSum += row.covered * multiplier;
      totalSum += row.total * multiplier;
    }
    const ratio = totalSum > 0 ? Math.min(1, Math.max(0, coveredSum / totalSum)) : 1;
    return { covered, total, untaggable, ratio: clean(ratio) };
  }

  return { getSpend, getDailySpend, getTagCoverage };
}

export type SpendQueries = ReturnType<typeof spendQueries>;

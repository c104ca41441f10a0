import type { Queryable } from '@costgov/db';

/** Multipliers into one target currency, by source currency; a source without any rate is absent. */
export type Multipliers = Map<string, number>;

/**
 * How to convert each of `sources` into `target` with the operator's rates: the same currency is 1; a
 * direct rate (1 source = rate target) wins; otherwise the inverse of the reverse rate (1 target = rate
 * source) is used, so one `EUR USD 1.08` serves both directions. No chaining through a third currency.
 */
export async function multipliersInto(
  db: Queryable,
  target: string,
  sources: string[],
): Promise<Multipliers> {
  const multipliers: Multipliers = new Map();
  if (sources.includes(target)) multipliers.set(target, 1);
  const others = sources.filter((source) => source !== target);
  if (others.length === 0) return multipliers;
  const { rows } = await db.query<{ from_currency: string; to_currency: string; rate: number }>(
    `SELECT from_currency, to_currency, rate FROM exchange_rates
     WHERE (from_currency = ANY ($1::text[]) AND to_currency = $2)
        OR (from_currency = $2 AND to_currency = ANY ($1::text[]))`,
    [others, target],
  );
  for (const row of rows) if (row.from_currency !== target) multipliers.set(row.from_currency, row.rate);
  for (const row of rows) {
    if (row.from_currency === target && !multipliers.has(row.to_currency))
      multipliers.set(row.to_currency, 1 / row.rate);
  }
  return multipliers;
}

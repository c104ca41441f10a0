import type { Queryable } from '@costgov/db';
import { Violations } from '@costgov/errors';
import { isCurrencyCode } from './currency-codes';

/** 1 `fromCurrency` = `rate` `toCurrency`, as the operator set it. */
export interface Rate {
  fromCurrency: string;
  toCurrency: string;
  rate: number;
  updatedAt: Date;
}

interface RateRow {
  from_currency: string;
  to_currency: string;
  rate: number;
  updated_at: Date;
}

const toRate = (row: RateRow): Rate => ({
  fromCurrency: row.from_currency,
  toCurrency: row.to_currency,
  rate: row.rate,
  updatedAt: row.updated_at,
});

/** Exchange rates: set by the operator (not by teams), read by the spend queries for conversion. */
export function ratesFactory({ db, now }: { db: Queryable; now: () => Date }) {
  /** Sets or replaces the rate of one direction; the other direction uses its inverse unless set too. */
  async function setRate(input: { fromCurrency: string; toCurrency: string; rate: number }): Promise<Rate> {
    const violations = new Violations();
    const code = 'must be an ISO 4217 currency code in upper case (e.g. USD)';
    violations.check(isCurrencyCode(input.fromCurrency), 'from_currency', code);
    violations.check(isCurrencyCode(input.toCurrency), 'to_currency', code);
    violations.check(
      input.fromCurrency !== input.toCurrency,
      'to_currency',
      'must differ from from_currency',
    );
    violations.check(Number.isFinite(input.rate) && input.rate > 0, 'rate', 'must be a number > 0');
    violations.throwIfAny();
    const { rows } = await db.query<RateRow>(
      `INSERT INTO exchange_rates (from_currency, to_currency, rate, updated_at) VALUES ($1, $2, $3, $4)
       ON CONFLICT (from_currency, to_currency) DO UPDATE SET rate = excluded.rate, updated_at = excluded.updated_at
       RETURNING *`,
      [input.fromCurrency, input.toCurrency, input.rate, now()],
    );
    return toRate(rows[0]!);
  }

  async function listRates(): Promise<Rate[]> {
    const { rows } = await db.query<RateRow>(
      'SELECT * FROM exchange_rates ORDER BY from_currency, to_currency',
    );
    return rows.map(toRate);
  }

  return { setRate, listRates };
}

export type Rates = ReturnType<typeof ratesFactory>;

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Db } from '@costgov/db';
import { freshDb } from '@costgov/testing';
import { DecimalSum } from '../src/cost-data/decimal-sum';
import { futureCounter } from '../src/cost-data/reader';
import { decimalProblem, timestampForCopy, timestampProblem, utcDayOf } from '../src/cost-data/values';

let db: Db;
beforeAll(async () => {
  db = await freshDb('costs');
}, 30_000);
afterAll(() => db?.close());

/** A deterministic generator (mulberry32), so a failure can be replayed. */
function randomFrom(seed: number) {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** Decimal texts of every shape the reader lets through: signs, scales, exponents, long mantissas. */
function decimals(count: number, seed: number): string[] {
  const random = randomFrom(seed);
  const digits = (n: number) => Array.from({ length: n }, () => Math.floor(random() * 10)).join('');
  const values: string[] = [];
  for (let i = 0; i < count; i++) {
    const sign = ['', '-', '+', ''][Math.floor(random() * 4)]!;
    const shape = Math.floor(random() * 8);
    const whole = digits(1 + Math.floor(random() * 6));
    const fraction = digits(Math.floor(random() * 14));
    let value: string;
    if (shape === 0) value = `${sign}${whole}`;
    else if (shape === 1) value = `${sign}.${fraction || '5'}`;
    else if (shape === 2) value = `${sign}${whole}.`;
    else if (shape === 3)
      value = `${sign}${digits(12)}.${digits(12)}`; // 24 digits: past 2^53
    else if (shape === 4)
      value = `${sign}${whole}.${fraction}e${random() < 0.5 ? '-' : ''}${Math.floor(random() * 12)}`;
    else if (shape === 5) value = `${sign}0.${'0'.repeat(Math.floor(random() * 5))}`;
    else value = `${sign}${whole}.${fraction}`;
    expect(decimalProblem(value), value).toBeUndefined();
    values.push(value);
  }
  return values;
}

const postgresSum = async (values: string[]) =>
  (await db.query<{ sum: string }>(`SELECT sum(v::numeric)::text AS sum FROM unnest($1::text[]) v`, [values]))
    .rows[0]!.sum;

describe('DecimalSum', () => {
  it('sums like sum(numeric): the same text, scale included, for varied decimals', async () => {
    for (const seed of [1, 2, 3, 4, 5]) {
      const values = decimals(2_000, seed);
      const sum = new DecimalSum();
      for (const value of values) sum.add(value);
      expect(sum.toString(), `seed ${seed}`).toBe(await postgresSum(values));
    }
  });

  it('stays exact where floats would drift: many small mantissas past 2^53 in total', async () => {
    // 3,000 values of 15 nines each add up far past 2^53 in units of their scale.
    const values = Array.from({ length: 3_000 }, (_, i) => (i % 7 === 0 ? '-' : '') + '9999999.99999999');
    const sum = new DecimalSum();
    for (const value of values) sum.add(value);
    expect(sum.toString()).toBe(await postgresSum(values));
  });

  it('prints zero, negatives and credits that cancel as Postgres does', async () => {
    for (const values of [['0'], ['0.000'], ['1.50', '-1.5'], ['-0.001', '-2e-5'], ['15e1', '1.50e1']]) {
      const sum = new DecimalSum();
      for (const value of values) sum.add(value);
      expect(sum.toString(), values.join(' ')).toBe(await postgresSum(values));
    }
  });
});

describe('futureCounter', () => {
  it('counts and dates charges after an instant as a query of the stored timestamps does', async () => {
    const after = new Date('2026-11-28T06:30:15.250Z');
    const values = [
      '2026-11-28 06:30:15', // before, same second
      '2026-11-28T06:30:15.250Z', // equal: not after
      '2026-11-28T06:30:15.2504Z', // 400 microseconds after
      '2026-11-28T06:30:15.2500004Z', // rounds to the instant itself
      '2026-11-28T06:30:16Z',
      '2026-11-28T08:30:00+02:00', // 06:30 UTC: before
      '2026-11-28T04:00:00-05:00', // 09:00 UTC: after
      '2026-11-29 00:00',
      '2026-11-27 23:59:59',
      '2027-01-01T00:00:00.999999Z',
      '2025-12-31T23:00:00Z',
    ];
    const counter = futureCounter(after);
    for (const value of values) {
      expect(timestampProblem(value), value).toBeUndefined();
      const stored = timestampForCopy(value);
      counter.add(stored, utcDayOf(stored));
    }
    const { rows } = await db.query<{ rows: number; latest: string }>(
      `SELECT count(*)::int AS rows,
         to_char(max(t) AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"') AS latest
       FROM unnest($1::text[]) v, LATERAL (SELECT v::timestamptz AS t) s WHERE t > $2`,
      [values.map(timestampForCopy), after],
    );
    expect(counter.result()).toEqual(rows[0]);
    expect(futureCounter(undefined).result()).toEqual({ rows: 0, latest: '' });
  });
});

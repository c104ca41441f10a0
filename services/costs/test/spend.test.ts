import { timestampFromDate } from '@bufbuild/protobuf/wkt';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { migrate, migrationsFrom, type Db } from '@costgov/db';
import { ValidationError } from '@costgov/errors';
import { newId } from '@costgov/ids';
import { freshDb } from '@costgov/testing';
import path from 'node:path';
import { spendQueries, type SpendQueries } from '../src/spend/spend';

const teamA = newId('team');
const teamB = newId('team');
const conA1 = newId('connection');
const conA2 = newId('connection');
const conB = newId('connection');

interface Row {
  team?: string;
  connection: string;
  day: string;
  currency?: string;
  effective: number;
  billed?: number;
  tags?: Record<string, string>;
}

// Rollup rows as the ingestion writes them; every expectation below is summed from this list.
const rows: Row[] = [
  { connection: conA1, day: '2026-03-01', effective: 10.5, tags: { env: 'prod', team: 'web' } },
  { connection: conA1, day: '2026-03-01', effective: 4.25, tags: { env: 'dev' } },
  { connection: conA1, day: '2026-03-15', effective: 100, billed: 120, tags: { env: 'prod', team: '' } },
  { connection: conA2, day: '2026-03-31', effective: 7, tags: { env: 'prod', team: 'data' } },
  { connection: conA2, day: '2026-03-31', currency: 'EUR', effective: 50, tags: { env: 'prod' } },
  { connection: conA2, day: '2026-03-20', currency: 'JPY', effective: 1000, tags: {} },
  { connection: conA1, day: '2026-02-28', effective: 1000, tags: { env: 'prod' } }, // before the range
  { connection: conA1, day: '2026-04-01', effective: 2000, tags: { env: 'prod' } }, // after the range
  { team: teamB, connection: conB, day: '2026-03-10', effective: 999, tags: { env: 'prod' } },
];

const march = {
  from: timestampFromDate(new Date('2026-03-01T00:00:00Z')),
  to: timestampFromDate(new Date('2026-04-01T00:00:00Z')),
};
const both = [conA1, conA2];

const sum = (list: Row[]) => list.reduce((total, row) => total + row.effective, 0);
const inMarch = (row: Row) => row.day >= '2026-03-01' && row.day < '2026-04-01';
const ofA = (row: Row) => (row.team ?? teamA) === teamA;
const currencyOf = (row: Row) => row.currency ?? 'USD';

let db: Db;

/**
 * A rollup row as an upload writes it: daily_spend per day, billing period (the day's month unless
 * given), currency, tag set and usage-based flag; rows of one key add up, as their raw rows would have.
 */
async function addRollup(row: {
  team: string;
  connection: string;
  day: string;
  currency?: string;
  tags?: Record<string, string>;
  usageBased?: boolean;
  billed: number;
  effective: number;
  records?: number;
}) {
  await db.query(
    `INSERT INTO daily_spend AS s (team_id, connection_id, day, billing_period_start, billing_currency, tags,
       tags_hash, usage_based, billed_cost, effective_cost, records)
     VALUES ($1, $2, $3::date, date_trunc('month', $3::date)::date, $4, $5::jsonb, md5($5::jsonb::text), $6,
       $7, $8, $9)
     ON CONFLICT (connection_id, day, billing_currency, tags_hash, usage_based, billing_period_start) DO UPDATE SET
       billed_cost = s.billed_cost + excluded.billed_cost, effective_cost = s.effective_cost + excluded.effective_cost,
       records = s.records + excluded.records`,
    [
      row.team,
      row.connection,
      row.day,
      row.currency ?? 'USD',
      JSON.stringify(row.tags ?? {}),
      row.usageBased ?? true,
      row.billed,
      row.effective,
      row.records ?? 1,
    ],
  );
}

/** Spend counts only connections that exist. */
async function addConnection(team: string, id: string): Promise<string> {
  await db.query(`INSERT INTO connections (id, team_id, name, provider) VALUES ($1, $2, $1, 'aws')`, [
    id,
    team,
  ]);
  return id;
}
let spend: SpendQueries;

beforeAll(async () => {
  db = await freshDb('costs');
  await migrate(db, migrationsFrom(path.join(__dirname, '../src/db/migrations')));
  for (const row of rows)
    await addRollup({
      team: row.team ?? teamA,
      connection: row.connection,
      day: row.day,
      currency: currencyOf(row),
      tags: row.tags,
      billed: row.billed ?? row.effective,
      effective: row.effective,
    });
  for (const [team, connection] of [
    [teamA, conA1],
    [teamA, conA2],
    [teamB, conB],
  ] as const)
    await addConnection(team, connection);
  spend = spendQueries({ db });
});

afterAll(async () => {
  await db?.close();
});

describe(`spend from the daily rollups (${process.env.DATABASE_URL ? 'postgres' : 'pglite'})`, () => {
  it('sums EffectiveCost per billing currency over [from, to) and names the last charge day', async () => {
    const answer = await spend.getSpend(teamA, { connectionIds: both, tags: {}, ...march });
    const expected = ['EUR', 'JPY', 'USD'].map((currency) => ({
      currency,
      amount: sum(rows.filter((row) => ofA(row) && inMarch(row) && currencyOf(row) === currency)),
    }));
    expect(answer.byCurrency).toEqual(expected);
    expect(answer.lastChargeDay).toBe('2026-03-31');
    expect(answer.unconverted).toEqual([]);
  });

  it('counts only the given connections, and a day whose start lies in the range', async () => {
    const answer = await spend.getSpend(teamA, {
      connectionIds: [conA1],
      tags: {},
      from: timestampFromDate(new Date('2026-02-27T12:00:00Z')),
      to: timestampFromDate(new Date('2026-03-01T00:00:01Z')),
    });
    const expected = sum(
      rows.filter(
        (row) => row.connection === conA1 && (row.day === '2026-02-28' || row.day === '2026-03-01'),
      ),
    );
    expect(answer.byCurrency).toEqual([{ currency: 'USD', amount: expected }]);
    expect(answer.lastChargeDay).toBe('2026-03-01');
  });

  it('narrows to records carrying every given tag', async () => {
    const answer = await spend.getSpend(teamA, {
      connectionIds: both,
      tags: { env: 'prod', team: 'web' },
      ...march,
    });
    expect(answer.byCurrency).toEqual([{ currency: 'USD', amount: 10.5 }]);
    const prod = await spend.getSpend(teamA, { connectionIds: both, tags: { env: 'prod' }, ...march });
    const expected = rows.filter(
      (row) => ofA(row) && inMarch(row) && row.tags?.env === 'prod' && currencyOf(row) === 'USD',
    );
    expect(prod.byCurrency.find((c) => c.currency === 'USD')?.amount).toBe(sum(expected));
  });

  it('counts nothing of a connection that no longer exists', async () => {
    const gone = await addConnection(teamA, newId('connection'));
    await addRollup({ team: teamA, connection: gone, day: '2026-03-02', billed: 5, effective: 5 });
    const before = await spend.getSpend(teamA, { connectionIds: [gone], tags: {}, ...march });
    expect(before.byCurrency).toEqual([{ currency: 'USD', amount: 5 }]);
    await db.query('DELETE FROM connections WHERE id = $1', [gone]);
    const after = await spend.getSpend(teamA, { connectionIds: [gone], tags: {}, ...march });
    expect(after).toMatchObject({ byCurrency: [], lastChargeDay: '' });
    await db.query('DELETE FROM daily_spend WHERE connection_id = $1', [gone]);
  });

  it('never sees another team’s rows, even when asked for its connection', async () => {
    const answer = await spend.getSpend(teamA, { connectionIds: [conB], tags: {}, ...march });
    expect(answer).toMatchObject({ byCurrency: [], lastChargeDay: '' });
    const own = await spend.getSpend(teamB, { connectionIds: [conB, conA1], tags: {}, ...march });
    expect(own.byCurrency).toEqual([{ currency: 'USD', amount: 999 }]);
  });

  it('converts with a direct rate or the inverse of the reverse one, and reports currencies without a rate', async () => {
    await db.query(
      `INSERT INTO exchange_rates (from_currency, to_currency, rate) VALUES ('EUR', 'USD', 1.25)`,
    );
    const usd = await spend.getSpend(teamA, { connectionIds: both, tags: {}, ...march, currency: 'USD' });
    const usdRows = sum(rows.filter((row) => ofA(row) && inMarch(row) && currencyOf(row) === 'USD'));
    expect(usd.converted).toBeCloseTo(usdRows + 50 * 1.25, 9);
    expect(usd.unconverted).toEqual([{ currency: 'JPY', amount: 1000 }]);

    const eur = await spend.getSpend(teamA, { connectionIds: both, tags: {}, ...march, currency: 'EUR' });
    expect(eur.converted).toBeCloseTo(50 + usdRows / 1.25, 9);
    expect(eur.unconverted).toEqual([{ currency: 'JPY', amount: 1000 }]);

    // A direct rate wins over the inverse of the reverse one.
    await db.query(
      `INSERT INTO exchange_rates (from_currency, to_currency, rate) VALUES ('USD', 'EUR', 0.5)`,
    );
    const direct = await spend.getSpend(teamA, { connectionIds: both, tags: {}, ...march, currency: 'EUR' });
    expect(direct.converted).toBeCloseTo(50 + usdRows * 0.5, 9);
    await db.query(`DELETE FROM exchange_rates`);
  });

  it('refuses a currency that is not ISO 4217 and a range that ends before it starts', async () => {
    await expect(
      spend.getSpend(teamA, { connectionIds: both, tags: {}, ...march, currency: 'usd' }),
    ).rejects.toThrow(ValidationError);
    await expect(
      spend.getSpend(teamA, { connectionIds: both, tags: {}, from: march.to, to: march.from }),
    ).rejects.toThrow(ValidationError);
    await expect(spend.getSpend(teamA, { connectionIds: both, tags: {} })).rejects.toThrow(ValidationError);
  });

  it('gives spend per day and currency', async () => {
    const answer = await spend.getDailySpend(teamA, { connectionIds: both, tags: {}, ...march });
    const keys = [
      ...new Set(
        rows.filter((row) => ofA(row) && inMarch(row)).map((row) => `${row.day} ${currencyOf(row)}`),
      ),
    ].sort();
    expect(answer.days.map((d) => `${d.day} ${d.currency}`)).toEqual(keys);
    const first = answer.days.find((d) => d.day === '2026-03-15');
    // The rows of this list are all usage-based (the column's default).
    expect(first).toEqual({
      day: '2026-03-15',
      currency: 'USD',
      effectiveCost: 100,
      billedCost: 120,
      usageCost: 100,
    });
  });

  it('measures tag coverage as the share of EffectiveCost carrying every required key with a value', async () => {
    const usdOnly = await spend.getTagCoverage(teamA, {
      connectionIds: [conA1],
      requiredTags: ['env', 'team'],
      ...march,
    });
    // conA1 in March: 10.5 carries both, 4.25 lacks team, 100 has an empty team.
    expect(usdOnly.covered).toEqual([{ currency: 'USD', amount: 10.5 }]);
    expect(usdOnly.total).toEqual([{ currency: 'USD', amount: 10.5 + 4.25 + 100 }]);
    expect(usdOnly.ratio).toBeCloseTo(10.5 / 114.75, 12);

    const none = await spend.getTagCoverage(teamA, {
      connectionIds: [conB],
      requiredTags: ['env'],
      ...march,
    });
    expect(none).toEqual({ covered: [], total: [], untaggable: [], ratio: 1 });
  });

  it('matches required keys whatever their case and -, _ or spaces, as the scanner does', async () => {
    const conA3 = await addConnection(teamA, newId('connection'));
    // AWS tags beside Google Cloud labels (lower case only) and other spellings of the same keys.
    const planted: Array<{ effective: number; tags: Record<string, string> }> = [
      { effective: 11, tags: { Environment: 'prod', Owner: 'ana', CostCenter: '1' } },
      { effective: 13, tags: { environment: 'prod', owner: 'bo', 'cost-center': '2' } },
      { effective: 17, tags: { ENVIRONMENT: 'prod', owner: 'cy', 'Cost Center': '3', cost_center: '' } },
      { effective: 19, tags: { env: 'prod', owner: 'di', cost_center: '4' } }, // env is another key
      { effective: 23, tags: { environment: 'prod', OWNER: ' ', costcenter: '5' } }, // blank owner
    ];
    for (const row of planted)
      await addRollup({
        team: teamA,
        connection: conA3,
        day: '2026-03-05',
        tags: row.tags,
        billed: row.effective,
        effective: row.effective,
      });
    const required = ['Environment', 'Owner', 'CostCenter'];
    // The test's own reading of the rule: some key equal once lower-cased and stripped of - _ and spaces.
    const fold = (key: string) => key.toLowerCase().split(/[-_ ]/).join('');
    const carries = (tags: Record<string, string>) =>
      required.every((key) =>
        Object.entries(tags).some(([k, v]) => fold(k) === fold(key) && v.trim() !== ''),
      );
    const covered = planted
      .filter((row) => carries(row.tags))
      .reduce((total, row) => total + row.effective, 0);
    const total = planted.reduce((sum, row) => sum + row.effective, 0);
    expect(covered).toBeGreaterThan(0);
    expect(covered).toBeLessThan(total);
    const answer = await spend.getTagCoverage(teamA, {
      connectionIds: [conA3],
      requiredTags: required,
      ...march,
    });
    expect(answer.covered).toEqual([{ currency: 'USD', amount: covered }]);
    expect(answer.total).toEqual([{ currency: 'USD', amount: total }]);
    expect(answer.ratio).toBeCloseTo(covered / total, 12);
  });

  it('tells usage-based spend and its last day from fees counted once, converted alike', async () => {
    const con = await addConnection(teamA, newId('connection'));
    await db.query(
      `INSERT INTO exchange_rates (from_currency, to_currency, rate) VALUES ('GBP', 'USD', 1.25)`,
    );
    const planted = [
      { day: '2026-03-01', currency: 'USD', effective: 300, usage: false }, // monthly fee on the 1st
      { day: '2026-03-01', currency: 'USD', effective: 20, usage: true },
      { day: '2026-03-07', currency: 'GBP', effective: 8, usage: true },
      { day: '2026-03-09', currency: 'USD', effective: 50, usage: false }, // a purchase after the last usage
      { day: '2026-03-09', currency: 'CHF', effective: 5, usage: true }, // no rate: not converted
    ];
    for (const row of planted)
      await addRollup({
        team: teamA,
        connection: con,
        day: row.day,
        currency: row.currency,
        usageBased: row.usage,
        billed: row.effective,
        effective: row.effective,
      });
    try {
      const rate = (currency: string) => ({ USD: 1, GBP: 1.25 })[currency];
      const converted = planted.filter((row) => rate(row.currency) !== undefined);
      const value = (list: typeof planted) =>
        list.reduce((total, row) => total + row.effective * rate(row.currency)!, 0);
      const answer = await spend.getSpend(teamA, {
        connectionIds: [con],
        tags: {},
        currency: 'USD',
        ...march,
      });
      expect(answer.converted).toBeCloseTo(value(converted), 10);
      expect(answer.usageConverted).toBeCloseTo(value(converted.filter((row) => row.usage)), 10);
      const usageDays = planted.filter((row) => row.usage).map((row) => row.day);
      // The CHF row has no rate but is data all the same: the last usage day counts it.
      expect(answer.lastUsageDay).toBe(usageDays.sort().at(-1));
      const lastDay = planted
        .map((row) => row.day)
        .sort()
        .at(-1)!;
      expect(answer.dataThrough).toEqual(new Date(Date.parse(`${lastDay}T00:00:00Z`) + 86_400_000));
      const daily = await spend.getDailySpend(teamA, { connectionIds: [con], tags: {}, ...march });
      for (const day of daily.days) {
        const ofDay = planted.filter((row) => row.day === day.day && row.currency === day.currency);
        expect(day.usageCost).toBe(ofDay.filter((row) => row.usage).reduce((t, row) => t + row.effective, 0));
      }
      const none = await spend.getSpend(teamA, { connectionIds: [con], tags: {}, ...march, from: march.to });
      expect(none.dataThrough).toBeNull();
    } finally {
      await db.query('DELETE FROM daily_spend WHERE connection_id = $1', [con]);
      await db.query(`DELETE FROM exchange_rates WHERE from_currency = 'GBP'`);
    }
  });

  it('weighs currencies in the one with the most cost, with the operator’s rates where they exist', async () => {
    // conA2 in March: USD 7 carries env, EUR 50 carries env, JPY 1000 carries nothing.
    const request = { connectionIds: [conA2], requiredTags: ['env'], ...march };
    const faceValue = await spend.getTagCoverage(teamA, request);
    expect(faceValue.covered).toEqual([
      { currency: 'EUR', amount: 50 },
      { currency: 'JPY', amount: 0 },
      { currency: 'USD', amount: 7 },
    ]);
    // JPY has the most cost; without rates every currency counts at face value.
    expect(faceValue.ratio).toBeCloseTo(57 / 1057, 12);
    await db.query(
      `INSERT INTO exchange_rates (from_currency, to_currency, rate) VALUES ('USD', 'JPY', 150), ('JPY', 'EUR', 0.006)`,
    );
    const converted = await spend.getTagCoverage(teamA, request);
    // Into JPY: USD directly (x150), EUR by the inverse of JPY->EUR (x1/0.006).
    const eurInJpy = 50 / 0.006;
    expect(converted.ratio).toBeCloseTo((7 * 150 + eurInJpy) / (7 * 150 + eurInJpy + 1000), 12);
    await db.query('DELETE FROM exchange_rates');
  });

  // Its speed (budget evaluation p99 with 10M rows loaded) is measured by `npm run bench`, not here.
  it('answers a budget over a month of 3,300 resources a day (3M hourly raw rows) from the daily rollup', async () => {
    const con = await addConnection(teamA, newId('connection'));
    // 3,300 resources a day, rolled up as an upload does: per day and tag set.
    await db.query(
      `INSERT INTO daily_spend (team_id, connection_id, day, billing_period_start, billing_currency, tags,
         tags_hash, billed_cost, effective_cost, records)
       SELECT $1, $2, day, '2026-07-01', 'USD', tags, md5(tags::text), sum(1.5), sum(1.25), sum(24)
       FROM (SELECT '2026-07-01'::date + d AS day,
           CASE WHEN r % 5 = 0 THEN '{}'::jsonb ELSE jsonb_build_object('application', 'app' || (r % 6),
             'environment', 'env' || (r % 3), 'team', 'team' || (r % 4)) END AS tags
         FROM generate_series(0, 30) d, generate_series(1, 3300) r) resources
       GROUP BY day, tags`,
      [teamA, con],
    );
    await db.exec('ANALYZE daily_spend');
    const request = {
      connectionIds: [con, conA1, conA2],
      from: timestampFromDate(new Date('2026-07-01T00:00:00Z')),
      to: timestampFromDate(new Date('2026-08-01T00:00:00Z')),
      currency: 'USD',
    };
    const all = await spend.getSpend(teamA, { ...request, tags: {} });
    const tagged = await spend.getSpend(teamA, { ...request, tags: { environment: 'env1', team: 'team2' } });
    expect(all.converted).toBe(31 * 3300 * 1.25);
    // r with r % 3 = 1 and r % 4 = 2 (and so r % 5 <> 0 for tags) over 1..3300: counted here, not copied.
    let matching = 0;
    for (let r = 1; r <= 3300; r++) if (r % 5 !== 0 && r % 3 === 1 && r % 4 === 2) matching++;
    expect(tagged.converted).toBe(31 * matching * 1.25);
  });
});

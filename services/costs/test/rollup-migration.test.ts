import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { migrate, migrationsFrom, type Db } from '@costgov/db';
import { newId } from '@costgov/ids';
import { freshDb } from '@costgov/testing';
import { usageBasedSql } from '../src/cost-data/usage-based';

const all = migrationsFrom(path.join(__dirname, '../src/db/migrations'));
const team = newId('team');
const connection = newId('connection');

// Raw rows as uploads before migration 0005 stored them, and whether each is usage-based and taggable
// by the rules docs/decisions.md states (the test's own reading of them).
const raw = [
  {
    day: '2026-10-01',
    frequency: 'Recurring',
    category: 'Purchase',
    cost: 300,
    usage: false,
    resource: 'sp-1',
  },
  {
    day: '2026-10-01',
    frequency: 'Usage-Based',
    category: 'Usage',
    cost: 12.5,
    usage: true,
    resource: 'i-1',
  },
  {
    day: '2026-10-01',
    frequency: 'USAGE-BASED',
    category: 'usage',
    cost: 0.25,
    usage: true,
    resource: 'i-2',
  },
  {
    day: '2026-10-02',
    frequency: 'Usage-based',
    category: 'Adjustment',
    cost: 1.5,
    usage: false,
    resource: null,
  },
  { day: '2026-10-02', frequency: 'Usage-Based', category: 'Tax', cost: 0.75, usage: false, resource: null },
  { day: '2026-10-02', frequency: null, category: 'Usage', cost: 10, usage: true, resource: 'i-1' },
  { day: '2026-10-02', frequency: null, category: 'Tax', cost: 4, usage: false, resource: null },
  { day: '2026-10-02', frequency: null, category: null, cost: 3, usage: true, resource: 'i-3' },
  { day: '2026-10-03', frequency: 'Recurring', category: null, cost: 20, usage: false, resource: 'vol-1' },
  { day: '2026-10-03', frequency: null, category: 'Credit', cost: -2, usage: false, resource: null },
  { day: '2026-10-03', frequency: 'One-Time', category: 'Usage', cost: 50, usage: false, resource: 'i-1' },
];
const untaggable = (row: (typeof raw)[number]) =>
  !row.resource || ['Tax', 'Credit', 'Purchase', 'Adjustment'].includes(row.category ?? '');

let db: Db;

/** The test's own sums of the raw rows per day and usage-based flag, oldest day first, fees first. */
function rawSums() {
  const sums = new Map<
    string,
    { day: string; usage_based: boolean; effective: number; untaggable: number; records: number }
  >();
  for (const row of raw) {
    const key = `${row.day} ${row.usage}`;
    const entry = sums.get(key) ?? {
      day: row.day,
      usage_based: row.usage,
      effective: 0,
      untaggable: 0,
      records: 0,
    };
    entry.effective += row.cost;
    if (untaggable(row)) entry.untaggable += row.cost;
    entry.records += 1;
    sums.set(key, entry);
  }
  return [...sums.values()].sort(
    (a, b) => a.day.localeCompare(b.day) || Number(a.usage_based) - Number(b.usage_based),
  );
}

beforeAll(async () => {
  db = await freshDb('costs');
  await migrate(
    db,
    all.filter((m) => m.name < '0005'),
  );
  await db.query(`INSERT INTO connections (id, team_id, name, provider) VALUES ($1, $2, 'aws', 'aws')`, [
    connection,
    team,
  ]);
  for (const row of raw)
    await db.query(
      `INSERT INTO cost_records (connection_id, upload_id, billing_period_start, billing_period_end,
         charge_period_start, charge_period_end, billed_cost, effective_cost, billing_currency,
         charge_frequency, charge_category, service_name, resource_id)
       VALUES ($1, 'u', '2026-10-01', '2026-11-01', $2::date, $2::date + 1, $3, $3, 'USD', $4, $5, 'EC2', $6)`,
      [connection, row.day, row.cost, row.frequency, row.category, row.resource],
    );
  // Up to 0005: what it left, before 0006 moves the raw rows into partitions (partition-migration.test).
  await migrate(
    db,
    all.filter((m) => m.name < '0006'),
  );
});

afterAll(() => db?.close());

describe('migration 0005 on data stored before it', () => {
  it('rolls up by the one usage-based rule uploads use', () => {
    expect(all.find((m) => m.name.startsWith('0005'))!.sql).toContain(usageBasedSql('r'));
  });

  it('rolls up the raw rows again, usage-based apart, per day', async () => {
    const { rows } = await db.query<{
      day: string;
      usage_based: boolean;
      effective: number;
      untaggable: number;
      records: number;
    }>(
      `SELECT to_char(day, 'YYYY-MM-DD') AS day, usage_based, effective_cost::float8 AS effective,
         untaggable_cost::float8 AS untaggable, records::int AS records
       FROM daily_spend WHERE connection_id = $1 ORDER BY day, usage_based`,
      [connection],
    );
    expect(rows).toEqual(rawSums());
  });
});

describe('migration 0009 on the rollups before it', () => {
  // A day that two billing periods charge: the raw rows above (period October) and a row of September's
  // period charged on 2 October (a late charge), added to daily_costs as uploads then did. October's
  // usage-based rows of that day have the same currency and tag set: one row of daily_spend each.
  const late = { day: '2026-10-02', cost: 6.5 };

  beforeAll(async () => {
    await db.query(
      `INSERT INTO daily_costs (team_id, connection_id, day, billing_period_start, service_name, resource_id, tags,
         billing_currency, usage_based, billed_cost, effective_cost, untaggable_cost, records)
       VALUES ($1, $2, $3::date, '2026-09-01', 'S3', 'bucket', '{}', 'USD', true, $4, $4, 0, 1)`,
      [team, connection, late.day, late.cost],
    );
    await migrate(db, all);
  });

  it('keeps daily spend per billing period, the same sums, and drops daily_costs and its triggers', async () => {
    const { rows } = await db.query<{
      day: string;
      period: string;
      usage_based: boolean;
      effective: number;
      untaggable: number;
      records: number;
    }>(
      `SELECT to_char(day, 'YYYY-MM-DD') AS day, to_char(billing_period_start, 'YYYY-MM-DD') AS period,
         usage_based, effective_cost::float8 AS effective, untaggable_cost::float8 AS untaggable,
         records::int AS records
       FROM daily_spend WHERE connection_id = $1 ORDER BY day, period, usage_based`,
      [connection],
    );
    // The test's own sums of the raw rows (all of October's period) per day and usage, and the late row.
    const expected = rawSums().map((sum) => ({ ...sum, period: '2026-10-01' }));
    const lateRow = {
      day: late.day,
      period: '2026-09-01',
      usage_based: true,
      effective: late.cost,
      untaggable: 0,
      records: 1,
    };
    expect(rows).toEqual(
      [...expected, lateRow].sort(
        (a, b) =>
          a.day.localeCompare(b.day) ||
          a.period.localeCompare(b.period) ||
          Number(a.usage_based) - Number(b.usage_based),
      ),
    );
    const { rows: left } = await db.query<{ costs: string | null; triggers: number }>(
      `SELECT to_regclass('daily_costs')::text AS costs,
         (SELECT count(*)::int FROM pg_trigger WHERE tgname LIKE 'daily_costs_%') AS triggers`,
    );
    expect(left).toEqual([{ costs: null, triggers: 0 }]);
  });
});

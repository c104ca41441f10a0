import path from 'node:path';
import { parse } from 'csv-parse/sync';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { migrate, migrationsFrom, type Db } from '@costgov/db';
import { newId } from '@costgov/ids';
import { freshDb, uploadParts } from '@costgov/testing';
import { focusLines } from '../src/cost-data/generate';
import { startCosts, type CostsUnderTest } from './fixture';

const all = migrationsFrom(path.join(__dirname, '../src/db/migrations'));
const team = newId('team');
// A connection id as ids are made, and one a table name cannot hold as it is (named by its md5).
const connections = [newId('connection'), 'Legacy Connection.1'];
const periods = ['2026-09-01', '2026-10-01'];

/** Raw rows as uploads before migration 0006 stored them: a few per connection and period, varied. */
const raw = connections.flatMap((connection, c) =>
  periods.flatMap((period, p) =>
    Array.from({ length: 3 + c + 2 * p }, (_, i) => ({
      connection,
      period,
      upload: `upload-${c}-${p}`,
      cost: (i + 1) * 1.25 + c,
      resource: i % 2 ? `i-${i}` : null,
      tags: i % 3 ? { team: `t${i}` } : null,
    })),
  ),
);

/** Every row of cost_records as text, in one order: what the migration must keep exactly. */
const everyRow = async (db: Db) =>
  (
    await db.query<{ row: string }>(
      `SELECT to_jsonb(r)::text AS row FROM cost_records r
       ORDER BY connection_id, billing_period_start, upload_id, billed_cost, resource_id NULLS FIRST`,
    )
  ).rows.map((row) => row.row);

let db: Db;
let before: string[];
let costs: CostsUnderTest | undefined;

beforeAll(async () => {
  db = await freshDb('costs');
  await migrate(
    db,
    all.filter((m) => m.name < '0006'),
  );
  for (const connection of connections)
    await db.query(`INSERT INTO connections (id, team_id, name, provider) VALUES ($1, $2, $1, 'aws')`, [
      connection,
      team,
    ]);
  for (const row of raw)
    await db.query(
      `INSERT INTO cost_records (connection_id, upload_id, billing_period_start, billing_period_end,
         charge_period_start, charge_period_end, billed_cost, effective_cost, billing_currency, resource_id, tags)
       VALUES ($1, $2, $3::date, $3::date + 30, $3::date, $3::date + 1, $4, $4, 'USD', $5, $6)`,
      [row.connection, row.upload, row.period, row.cost, row.resource, row.tags],
    );
  before = await everyRow(db);
  await migrate(db, all);
});

afterAll(async () => {
  if (costs)
    await costs.stop(); // closes db
  else await db?.close();
});

describe('migration 0006 on rows stored before it', () => {
  it('keeps every row exactly', async () => {
    expect(before).toHaveLength(raw.length);
    expect(await everyRow(db)).toEqual(before);
  });

  it('puts each connection and period in a partition of its own, listed with its rows', async () => {
    const { rows: kind } = await db.query<{ relkind: string }>(
      `SELECT relkind FROM pg_class WHERE oid = 'cost_records'::regclass`,
    );
    expect(kind[0]!.relkind).toBe('p');
    const { rows: placed } = await db.query<{
      connection_id: string;
      period: string;
      partition: string;
      n: number;
    }>(
      `SELECT connection_id, to_char(billing_period_start, 'YYYY-MM-DD') AS period,
         tableoid::regclass::text AS partition, count(*)::int AS n
       FROM cost_records GROUP BY 1, 2, 3 ORDER BY 1, 2`,
    );
    const expected = connections
      .flatMap((connection) => periods.map((period) => ({ connection, period })))
      .map(({ connection, period }) => ({
        connection_id: connection,
        period,
        n: raw.filter((row) => row.connection === connection && row.period === period).length,
      }))
      .sort(
        (a, b) => a.connection_id.localeCompare(b.connection_id, 'en') || a.period.localeCompare(b.period),
      );
    expect(placed.map(({ connection_id, period, n }) => ({ connection_id, period, n }))).toEqual(
      expect.arrayContaining(expected),
    );
    expect(placed).toHaveLength(expected.length);
    expect(new Set(placed.map((row) => row.partition)).size).toBe(expected.length);
    for (const row of placed) {
      const { rows: named } = await db.query<{ name: string }>(
        'SELECT cost_records_period_table($1, $2::date) AS name',
        [row.connection_id, row.period],
      );
      expect(row.partition).toBe(named[0]!.name);
    }
    const { rows: listed } = await db.query<{ connection_id: string; period: string; rows: number }>(
      `SELECT connection_id, to_char(billing_period_start, 'YYYY-MM-DD') AS period, rows::int AS rows
       FROM cost_record_periods`,
    );
    expect(listed.map(({ connection_id, period, rows }) => ({ connection_id, period, n: rows }))).toEqual(
      expect.arrayContaining(expected),
    );
    expect(listed).toHaveLength(expected.length);
    const { rows: leftovers } = await db.query<{ old: string | null }>(
      `SELECT to_regclass('cost_records_partitioned')::text AS old`,
    );
    expect(leftovers[0]!.old).toBeNull();
  });

  it('lets an upload restate a migrated period, replacing exactly its rows', async () => {
    costs = await startCosts({ db });
    const connection = connections[0]!;
    const body = Buffer.from([...focusLines({ rows: 50, month: '2026-10', seed: 11 })].join(''));
    const records = parse(body, { columns: true }) as Record<string, string>[];
    const migrated = raw.filter((row) => row.connection === connection && row.period === '2026-10-01');
    const summary = await costs.clients.costData.uploadCostData(uploadParts(connection, body), {
      teamId: team,
    });
    expect(Number(summary.rowsReplaced)).toBe(migrated.length);
    const { rows } = await db.query<{ period: string; n: number; uploads: number }>(
      `SELECT to_char(billing_period_start, 'YYYY-MM-DD') AS period, count(*)::int AS n,
         count(DISTINCT upload_id)::int AS uploads
       FROM cost_records WHERE connection_id = $1 GROUP BY 1 ORDER BY 1`,
      [connection],
    );
    expect(rows).toEqual([
      {
        period: '2026-09-01',
        n: raw.filter((row) => row.connection === connection && row.period === '2026-09-01').length,
        uploads: 1,
      },
      { period: '2026-10-01', n: records.length, uploads: 1 },
    ]);
  }, 30_000);
});

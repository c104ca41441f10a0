import { timestampFromDate } from '@bufbuild/protobuf/wkt';
import { parse } from 'csv-parse/sync';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createOutbox } from '@costgov/bus';
import { costs } from '@costgov/contracts';
import type { Db } from '@costgov/db';
import { ValidationError } from '@costgov/errors';
import { newId } from '@costgov/ids';
import type { RpcClient } from '@costgov/rpc';
import { captureLogger, uploadParts } from '@costgov/testing';
import { focusLines, type GenerateOptions } from '../src/cost-data/generate';
import { costDataFactory } from '../src/cost-data/ingest';
import { retainedFrom, retentionFactory } from '../src/retention/retention';
import { startCosts, type CostsUnderTest } from './fixture';

const as = { teamId: newId('team') };
const asOther = { teamId: newId('team') };
const setup = process.env.DATABASE_URL ? 'postgres' : 'pglite';

let costsService: CostsUnderTest;
let db: Db;
let connections: RpcClient<typeof costs.ConnectionsService>;
let costData: RpcClient<typeof costs.CostDataService>;
let retentionClient: RpcClient<typeof costs.RetentionService>;

beforeAll(async () => {
  costsService = await startCosts();
  ({ db } = costsService);
  ({ connections, costData } = costsService.clients);
  retentionClient = costsService.client(costs.RetentionService);
}, 30_000);

afterAll(() => costsService?.stop());

const newConnection = async (owner = as) =>
  (await connections.createConnection({ name: `aws-${newId('event')}`, provider: 'aws' }, owner)).id;

/** A generated file and what the test reads out of it: its rows and their BilledCost sum. */
function file(options: GenerateOptions) {
  const body = Buffer.from([...focusLines(options)].join(''));
  const records = parse(body, { columns: true }) as Record<string, string>[];
  return {
    body,
    rows: records.length,
    billed: records.reduce((sum, record) => sum + Number(record.BilledCost), 0),
    effective: records.reduce((sum, record) => sum + Number(record.EffectiveCost), 0),
  };
}
type File = ReturnType<typeof file>;

/** Two files, the second's header line left out: one upload carrying both billing periods. */
const joined = (first: File, second: File): File => {
  const body = second.body.toString();
  return {
    body: Buffer.concat([first.body, Buffer.from(body.slice(body.indexOf('\n') + 1))]),
    rows: first.rows + second.rows,
    billed: first.billed + second.billed,
    effective: first.effective + second.effective,
  };
};

const upload = (connectionId: string, f: File, owner = as) =>
  costData.uploadCostData(uploadParts(connectionId, f.body), owner);

/** The period's raw rows as a reader sees them in one statement. */
async function periodTotal(connectionId: string, period: string) {
  const { rows } = await db.query<{ rows: number; billed: number }>(
    `SELECT count(*)::int AS rows, coalesce(sum(billed_cost), 0)::float8 AS billed
     FROM cost_records WHERE connection_id = $1 AND billing_period_start = $2::date`,
    [connectionId, period],
  );
  return { rows: Number(rows[0]!.rows), billed: Number(rows[0]!.billed) };
}

/** Heap and total bytes of every raw-row partition of a connection. */
async function partitionBytes(connectionId: string) {
  const { rows } = await db.query<{ heap: number; total: number; partitions: number }>(
    `SELECT coalesce(sum(pg_relation_size(t.relid)), 0)::float8 AS heap,
       coalesce(sum(pg_total_relation_size(t.relid)), 0)::float8 AS total, count(*)::int AS partitions
     FROM pg_partition_tree('cost_records') t
     JOIN cost_record_periods p ON p.table_name = t.relid::regclass::text
     WHERE t.isleaf AND p.connection_id = $1`,
    [connectionId],
  );
  return { heap: Number(rows[0]!.heap), total: Number(rows[0]!.total), partitions: rows[0]!.partitions };
}

const rollupsOf = `SELECT * FROM daily_spend WHERE connection_id = $1
  ORDER BY day, billing_period_start, tags::text, billing_currency, usage_based`;

const periodsOf = async (connectionId: string) =>
  (
    await db.query<{ period: string; rows: number | null; table_name: string }>(
      `SELECT to_char(billing_period_start, 'YYYY-MM-DD') AS period, rows, table_name FROM cost_record_periods
       WHERE connection_id = $1 ORDER BY billing_period_start`,
      [connectionId],
    )
  ).rows.map((row) => ({ ...row, rows: row.rows === null ? null : Number(row.rows) }));

describe(`restating a billing period swaps its partition (${setup})`, () => {
  it('readers during the swap see the old period or the new one, never both, never neither', async () => {
    const connectionId = await newConnection();
    const old = file({ rows: 1200, month: '2026-03', seed: 1 });
    const restated = file({ rows: 800, month: '2026-03', seed: 2 });
    expect(old.rows).not.toBe(restated.rows);
    await upload(connectionId, old);

    // A second connection of the pool on Postgres; on PGlite, statements interleaved with the upload's.
    const seen: Array<{ rows: number; billed: number }> = [];
    let reading = true;
    const reader = (async () => {
      while (reading) {
        seen.push(await periodTotal(connectionId, '2026-03-01'));
        // PGlite answers without I/O: let the upload's gRPC stream run between reads.
        await new Promise((resolve) => setImmediate(resolve));
      }
    })();
    for (const f of [restated, old, restated]) await upload(connectionId, f);
    reading = false;
    await reader;

    const matches = (observed: { rows: number; billed: number }, f: File) =>
      observed.rows === f.rows && Math.abs(observed.billed - f.billed) < 1e-6;
    for (const observed of seen) {
      expect(
        matches(observed, old) || matches(observed, restated),
        `${JSON.stringify(observed)} is neither the old total nor the new one`,
      ).toBe(true);
    }
    expect(seen.some((observed) => matches(observed, old))).toBe(true);
    expect(seen.some((observed) => matches(observed, restated))).toBe(true);
    expect(matches(seen.at(-1)!, restated)).toBe(true);
    expect(await periodsOf(connectionId)).toEqual([
      { period: '2026-03-01', rows: restated.rows, table_name: expect.stringContaining(connectionId) },
    ]);
  }, 120_000);

  it('keeps the raw rows the same size however often a period is restated', async () => {
    const connectionId = await newConnection();
    const f = file({ rows: 2000, month: '2026-04', seed: 3 });
    const first = await upload(connectionId, f);
    expect(Number(first.rowsReplaced)).toBe(0);
    const before = await partitionBytes(connectionId);
    expect(before.partitions).toBe(1);
    for (let i = 0; i < 4; i++) {
      const summary = await upload(connectionId, f);
      expect(Number(summary.rowsReplaced)).toBe(f.rows);
      const after = await partitionBytes(connectionId);
      expect(after.partitions).toBe(1);
      // The same rows in a fresh table: the same heap; a delete-and-insert would add a period each time.
      expect(after.heap).toBe(before.heap);
      expect(after.total).toBeLessThanOrEqual(before.total + 3 * 8192);
      expect(await periodTotal(connectionId, '2026-04-01')).toEqual({
        rows: f.rows,
        billed: expect.closeTo(f.billed, 6),
      });
    }
    // Nothing left over: no load table, no dropped partition still around.
    const { rows: leftovers } = await db.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM pg_class WHERE relname LIKE 'cost_staging_%' AND relkind = 'r'
       AND relnamespace = (SELECT oid FROM pg_namespace WHERE nspname = current_schema())`,
    );
    expect(leftovers[0]!.n).toBe(0);
  }, 60_000);

  it('splits a file of two billing periods into a partition each, replacing only those', async () => {
    const connectionId = await newConnection();
    const may = file({ rows: 500, month: '2026-05', seed: 4 });
    const june = file({ rows: 700, month: '2026-06', seed: 5 });
    const july = file({ rows: 300, month: '2026-07', seed: 6 });
    await upload(connectionId, july);
    const both = joined(may, june);
    const summary = await upload(connectionId, both);
    expect(summary.billingPeriods).toEqual(['2026-05-01', '2026-06-01']);
    expect(Number(summary.rowsReplaced)).toBe(0);
    const mayAgain = file({ rows: 400, month: '2026-05', seed: 7 });
    const again = await upload(connectionId, joined(mayAgain, june));
    expect(Number(again.rowsReplaced)).toBe(may.rows + june.rows);
    expect((await periodsOf(connectionId)).map(({ period, rows }) => ({ period, rows }))).toEqual([
      { period: '2026-05-01', rows: mayAgain.rows },
      { period: '2026-06-01', rows: june.rows },
      { period: '2026-07-01', rows: july.rows },
    ]);
    for (const [period, f] of [
      ['2026-05-01', mayAgain],
      ['2026-06-01', june],
      ['2026-07-01', july],
    ] as const) {
      expect(await periodTotal(connectionId, period)).toEqual({
        rows: f.rows,
        billed: expect.closeTo(f.billed, 6),
      });
    }
  }, 60_000);

  it("leaves each period's partition analyzed: the planner knows its rows", async () => {
    const connectionId = await newConnection();
    // A file of one period (its load table becomes the partition), then one of two (split once more).
    await upload(connectionId, file({ rows: 200, month: '2026-10', seed: 10 }));
    const two = joined(
      file({ rows: 300, month: '2026-11', seed: 11 }),
      file({ rows: 100, month: '2026-12', seed: 12 }),
    );
    await upload(connectionId, two);
    const periods = await periodsOf(connectionId);
    expect(periods.map((p) => p.period)).toEqual(['2026-10-01', '2026-11-01', '2026-12-01']);
    for (const { table_name: table, rows } of periods) {
      // ANALYZE sets reltuples (-1 for a table never analyzed nor vacuumed) and writes pg_statistic.
      const { rows: stats } = await db.query<{ reltuples: number; columns: number }>(
        `SELECT c.reltuples::float8 AS reltuples,
           (SELECT count(*)::int FROM pg_statistic s WHERE s.starelid = c.oid) AS columns
         FROM pg_class c WHERE c.oid = $1::regclass`,
        [table],
      );
      expect(Number(stats[0]!.reltuples), table).toBe(rows);
      expect(stats[0]!.columns, table).toBeGreaterThan(0);
      // And the scan's index, built on the load table before the swap (named after it) for ATTACH to adopt:
      // one ATTACH had to build would be named after the partition, under the lock readers wait for.
      const { rows: indexes } = await db.query<{ name: string; def: string }>(
        `SELECT indexname AS name, indexdef AS def FROM pg_indexes
         WHERE schemaname = current_schema() AND tablename = $1`,
        [table],
      );
      const scanIndexes = indexes.filter(({ def }) =>
        def.includes('(connection_id, resource_id COLLATE "C", charge_period_start)'),
      );
      expect(scanIndexes, table).toHaveLength(1);
      expect(scanIndexes[0]!.name, table).toMatch(/^cost_staging_/);
    }
  });

  it("stores nothing when a period's table cannot be made ready, and leaves the period as it was", async () => {
    const connectionId = await newConnection();
    const first = file({ rows: 150, month: '2026-07', seed: 70 });
    await upload(connectionId, first);
    const rollupsBefore = (await db.query(rollupsOf, [connectionId])).rows;
    expect(rollupsBefore.length).toBeGreaterThan(0);
    // The same db, but building a table's scan index fails: on another connection (Postgres, one period)
    // or in the swap's transaction (PGlite).
    const failing = (q: Pick<Db, 'exec'>) => (sql: string) =>
      sql.startsWith('CREATE INDEX') ? Promise.reject(new Error('index build failed')) : q.exec(sql);
    const broken = new Proxy(db, {
      get(target, key, receiver) {
        if (key === 'exec') return failing(target);
        if (key === 'transaction')
          return (work: (tx: Db) => Promise<unknown>) =>
            target.transaction((tx) =>
              work(
                new Proxy(tx, { get: (t, k, r) => (k === 'exec' ? failing(t) : Reflect.get(t, k, r)) }) as Db,
              ),
            );
        return Reflect.get(target, key, receiver);
      },
    });
    const costData = costDataFactory({
      db: broken,
      outbox: createOutbox({ source: 'costs' }),
      now: () => new Date(),
    });
    const again = file({ rows: 90, month: '2026-07', seed: 71 });
    await expect(
      costData.upload(as.teamId, {
        connectionId,
        contentEncoding: '',
        body: (async function* () {
          yield new Uint8Array(again.body);
        })(),
      }),
    ).rejects.toThrow('index build failed');
    // The first upload's period stands, whole, rollup included; the failed one's load table is gone, its
    // upload failed.
    expect(await periodTotal(connectionId, '2026-07-01')).toEqual({
      rows: first.rows,
      billed: expect.closeTo(first.billed, 6),
    });
    expect((await db.query(rollupsOf, [connectionId])).rows).toEqual(rollupsBefore);
    const { rows: uploads } = await db.query<{ status: string; loads: number }>(
      `SELECT u.status, (SELECT count(*)::int FROM pg_class WHERE relname = u.staging_table) AS loads
       FROM cost_uploads u WHERE u.connection_id = $1 ORDER BY u.started_at`,
      [connectionId],
    );
    // (The stored one's load table became the period's partition, under the partition's name.)
    expect(uploads).toEqual([
      { status: 'stored', loads: 0 },
      { status: 'failed', loads: 0 },
    ]);
  });

  it('reads only the partitions a connection and a period name', async () => {
    const connectionId = await newConnection();
    await upload(connectionId, file({ rows: 100, month: '2026-08', seed: 8 }));
    await upload(connectionId, file({ rows: 100, month: '2026-09', seed: 9 }));
    const { rows } = await db.query<{ 'QUERY PLAN': string }>(
      `EXPLAIN SELECT * FROM cost_records WHERE connection_id = '${connectionId}'
         AND billing_period_start >= '2026-09-01' AND billing_period_start < '2026-10-01'`,
    );
    const plan = rows.map((row) => row['QUERY PLAN']).join('\n');
    expect(plan).toContain(`cost_records_${connectionId}_20260901`);
    expect(plan).not.toContain('_20260801');
  });
});

describe(`attaching a period's new partition (${setup})`, () => {
  /**
   * A swap as the upload does it, in a transaction of the test's own: a table shaped like the partition,
   * its rows, with or without the CHECK constraint stating its bounds; the heap scans of the new table
   * that the swap itself ran (this transaction's statistics).
   */
  async function scansBySwap(connectionId: string, period: string, check: boolean) {
    return db.transaction(async (tx) => {
      const table = `cost_staging_test_${check ? 'checked' : 'bare'}`;
      await tx.exec(`CREATE TABLE ${table} (LIKE cost_records INCLUDING DEFAULTS)`);
      await tx.query(
        `INSERT INTO ${table} (connection_id, upload_id, billing_period_start, billing_period_end,
           charge_period_start, charge_period_end, billed_cost, effective_cost, billing_currency)
         SELECT $1, 'u', $2::date, $2::date + 30, $2::date + i % 28, $2::date + i % 28 + 1, i, i, 'USD'
         FROM generate_series(1, 500) i`,
        [connectionId, period],
      );
      // The root's index, built beforehand as the upload builds it, so that ATTACH adopts it (no build).
      await tx.exec(`CREATE INDEX ON ${table} (connection_id, resource_id COLLATE "C", charge_period_start)`);
      if (check) {
        await tx.exec(
          `ALTER TABLE ${table} ADD CONSTRAINT period_bounds
             CHECK (connection_id = '${connectionId}' AND billing_period_start = '${period}')`,
        );
      }
      const scans = async () =>
        Number(
          (await tx.query<{ n: number }>(`SELECT pg_stat_get_xact_numscans('${table}'::regclass)::int AS n`))
            .rows[0]!.n,
        );
      const before = await scans();
      const { rows } = await tx.query<{ name: string }>(
        `SELECT cost_records_swap($1, $2::date, $3, 500, 'u') AS replaced,
           cost_records_period_table($1, $2::date) AS name`,
        [connectionId, period, table],
      );
      const { rows: oid } = await tx.query<{ n: number }>(
        `SELECT pg_stat_get_xact_numscans($1::regclass)::int AS n`,
        [rows[0]!.name],
      );
      // Adopted: the partition has the one index it was given, attached to its parent's (the root's).
      const { rows: indexes } = await tx.query<{ attached: boolean }>(
        `SELECT EXISTS (SELECT FROM pg_inherits p WHERE p.inhrelid = i.indexrelid) AS attached
         FROM pg_index i WHERE i.indrelid = $1::regclass`,
        [rows[0]!.name],
      );
      expect(indexes).toEqual([{ attached: true }]);
      return Number(oid[0]!.n) - before;
    });
  }

  it('skips the validation scan when the CHECK constraint states its bounds', async () => {
    const connectionId = await newConnection();
    // Without the constraint ATTACH reads the table to validate it: the measure sees that scan.
    expect(await scansBySwap(connectionId, '2026-01-01', false)).toBe(1);
    expect(await scansBySwap(connectionId, '2026-02-01', true)).toBe(0);
    expect(await periodTotal(connectionId, '2026-02-01')).toMatchObject({ rows: 500 });
  });
});

describe(`the sweep of uploads a crash left loading (${setup})`, () => {
  it('drops their load tables once a day old, and leaves a running upload alone', async () => {
    const connectionId = await newConnection();
    const at = new Date();
    const uploads = [
      { id: crypto.randomUUID(), startedAt: new Date(at.getTime() - 25 * 3_600_000), swept: true },
      { id: crypto.randomUUID(), startedAt: new Date(at.getTime() - 60_000), swept: false },
    ];
    const tableOf = (id: string) => `cost_staging_${id.replaceAll('-', '')}`;
    for (const upload of uploads) {
      await db.query(
        `INSERT INTO cost_uploads (id, team_id, connection_id, status, staging_table, started_at)
         VALUES ($1, $2, $3, 'loading', $4, $5)`,
        [upload.id, as.teamId, connectionId, tableOf(upload.id), upload.startedAt],
      );
      // As the upload makes it: shaped like a partition, rows COPYed in before the crash.
      await db.exec(`CREATE TABLE ${tableOf(upload.id)} (LIKE cost_records INCLUDING DEFAULTS)`);
    }
    const costData = costDataFactory({ db, outbox: createOutbox({ source: 'costs' }), now: () => at });
    expect(await costData.sweepAbandoned()).toBe(1);
    for (const upload of uploads) {
      const { rows } = await db.query<{ status: string; table: string | null }>(
        `SELECT status, to_regclass($2)::text AS table FROM cost_uploads WHERE id = $1`,
        [upload.id, tableOf(upload.id)],
      );
      expect(rows[0]).toEqual(
        upload.swept ? { status: 'failed', table: null } : { status: 'loading', table: tableOf(upload.id) },
      );
    }
    await db.exec(`DROP TABLE ${tableOf(uploads[1]!.id)}`);
  });
});

describe(`retention of raw rows per team (${setup})`, () => {
  const at = new Date('2026-11-15T10:00:00Z');
  const months = ['2025-09', '2025-10', '2025-11', '2026-10'];

  it('is set per team over gRPC, checked, and cleared', async () => {
    expect(await retentionClient.getRawRetention({}, as)).toMatchObject({ teamId: as.teamId });
    expect((await retentionClient.getRawRetention({}, as)).rawRetentionMonths).toBeUndefined();
    expect((await retentionClient.setRawRetention({ rawRetentionMonths: 6 }, as)).rawRetentionMonths).toBe(6);
    expect((await retentionClient.getRawRetention({}, as)).rawRetentionMonths).toBe(6);
    for (const bad of [0, 1201]) {
      await expect(retentionClient.setRawRetention({ rawRetentionMonths: bad }, as)).rejects.toBeInstanceOf(
        ValidationError,
      );
    }
    expect((await retentionClient.setRawRetention({}, as)).rawRetentionMonths).toBeUndefined();
    expect((await retentionClient.getRawRetention({}, asOther)).rawRetentionMonths).toBeUndefined();
  });

  it('drops whole periods past retention, keeps the rollups and the spend answers', async () => {
    const kept = await newConnection();
    const untouched = await newConnection(asOther); // a team without retention
    const files = months.map((month, i) => file({ rows: 200, month, seed: 20 + i }));
    for (const f of files) {
      await upload(kept, f);
      await upload(untouched, f, asOther);
    }
    const whole = {
      from: timestampFromDate(new Date('2025-08-01T00:00:00Z')),
      to: timestampFromDate(new Date('2026-12-01T00:00:00Z')),
    };
    const spendBefore = await costData.getSpend({ connectionIds: [kept], ...whole }, as);
    const expected = files.reduce((sum, f) => sum + f.effective, 0);
    expect(spendBefore.byCurrency.reduce((sum, c) => sum + c.amount, 0)).toBeCloseTo(expected, 6);
    const rollupsBefore = await db.query(rollupsOf, [kept]);

    await retentionClient.setRawRetention({ rawRetentionMonths: 12 }, as);
    const { logger, lines } = captureLogger();
    const retention = retentionFactory({ db, now: () => at, logger });
    const from = retainedFrom(at, 12);
    expect(from.toISOString().slice(0, 10)).toBe('2025-11-01');
    const past = months.filter((month) => new Date(`${month}-01T00:00:00Z`) < from);
    expect(past).toEqual(['2025-09', '2025-10']);

    expect(await retention.sweep()).toBe(past.length);
    expect((await periodsOf(kept)).map((p) => p.period)).toEqual(['2025-11-01', '2026-10-01']);
    for (const [i, month] of months.entries()) {
      const raw = await periodTotal(kept, `${month}-01`);
      expect(raw.rows).toBe(past.includes(month) ? 0 : files[i]!.rows);
      expect(await periodTotal(untouched, `${month}-01`)).toMatchObject({ rows: files[i]!.rows });
    }
    const { rows: tables } = await db.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM pg_class WHERE relname = ANY($1::text[])`,
      [past.map((month) => `cost_records_${kept}_${month.replace('-', '')}01`)],
    );
    expect(tables[0]!.n).toBe(0);
    const dropped = lines.filter((line) => line.msg === 'dropped raw cost rows past retention');
    expect(dropped.map((line) => line.billing_period_start)).toEqual(past.map((month) => `${month}-01`));
    expect(dropped.every((line) => line.connection_id === kept && line.team_id === as.teamId)).toBe(true);

    const rollupsAfter = await db.query(rollupsOf, [kept]);
    expect(rollupsAfter.rows).toEqual(rollupsBefore.rows);
    expect(await costData.getSpend({ connectionIds: [kept], ...whole }, as)).toEqual(spendBefore);
    // A second sweep finds nothing more.
    expect(await retention.sweep()).toBe(0);
  }, 60_000);
});

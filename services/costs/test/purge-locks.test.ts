import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { encodePayload, RedeliverLater, type CloudEvent } from '@costgov/bus';
import { create } from '@bufbuild/protobuf';
import { events } from '@costgov/contracts';
import type { Db, Queryable } from '@costgov/db';
import { newId } from '@costgov/ids';
import { captureLogger } from '@costgov/testing';
import { purgeDeletedConnection } from '../src/connections/purge';
import { startCosts, type CostsUnderTest } from './fixture';

const setup = process.env.DATABASE_URL ? 'postgres' : 'pglite';
const teamId = newId('team');

let costsService: CostsUnderTest;
let db: Db;

beforeAll(async () => {
  costsService = await startCosts();
  ({ db } = costsService);
}, 30_000);

afterAll(() => costsService?.stop());

/** Raw rows of `periods` (one row each) and their rollups, for a connection id with no connection row. */
async function costDataOf(connectionId: string, periods: string[]) {
  for (const period of periods) {
    await db.query(`SELECT cost_records_partition($1, $2::date)`, [connectionId, period]);
    await db.query(
      `INSERT INTO cost_records (connection_id, upload_id, billing_period_start, billing_period_end,
         charge_period_start, charge_period_end, billed_cost, effective_cost, billing_currency)
       VALUES ($1, 'u', $2::date, $2::date + 30, $2::date, $2::date + 1, 1, 1, 'USD')`,
      [connectionId, period],
    );
    await db.query(
      `INSERT INTO daily_spend (team_id, connection_id, day, billing_period_start, billing_currency, tags,
         tags_hash, billed_cost, effective_cost, records)
       VALUES ($1, $2, $3::date, $3::date, 'USD', '{}', md5('{}'), 1, 1, 1)`,
      [teamId, connectionId, period],
    );
  }
}

const deleted = (connectionId: string): CloudEvent => ({
  specversion: '1.0',
  id: newId('event'),
  source: 'costs',
  type: 'costs.connection.deleted',
  subject: connectionId,
  time: new Date().toISOString(),
  datacontenttype: 'application/json',
  data: encodePayload(
    events.ConnectionChangedSchema,
    create(events.ConnectionChangedSchema, { connectionId, teamId, name: 'gone' }),
  ),
});

/** Tables and rows of the connection left: period list, its tables, rollups. */
async function leftOf(connectionId: string) {
  const { rows } = await db.query<{ periods: number; tables: number; rollups: number }>(
    `SELECT (SELECT count(*) FROM cost_record_periods WHERE connection_id = $1)::int AS periods,
       (SELECT count(*) FROM pg_class WHERE relname LIKE 'cost_records_' || $1 || '%')::int AS tables,
       (SELECT count(*) FROM daily_spend WHERE connection_id = $1)::int AS rollups`,
    [connectionId],
  );
  return rows[0]!;
}

const holdsRoot = async (tx: Queryable) =>
  (
    await tx.query<{ held: boolean }>(
      `SELECT EXISTS (SELECT FROM pg_locks WHERE pid = pg_backend_pid() AND granted
         AND relation = 'cost_records'::regclass AND mode = 'AccessExclusiveLock') AS held`,
    )
  ).rows[0]!.held;

describe(`purging a deleted connection keeps the root's lock short (${setup})`, () => {
  it('takes the exclusive lock on cost_records only for its last statement, after the rollups went', async () => {
    const connectionId = newId('connection');
    const other = newId('connection');
    await costDataOf(connectionId, ['2026-01-01', '2026-02-01', '2026-03-01']);
    await costDataOf(other, ['2026-03-01']);
    const { logger, lines } = captureLogger();
    // Every statement the purge sends, with whether the root was locked exclusively before it ran.
    const sent: Array<{ sql: string; rootLocked: boolean }> = [];
    await db.transaction(async (tx) => {
      const watched: Queryable = {
        query: async (sql, params, options) => {
          sent.push({ sql, rootLocked: await holdsRoot(tx) });
          return tx.query(sql, params, options);
        },
        exec: async (sql) => {
          sent.push({ sql, rootLocked: await holdsRoot(tx) });
          return tx.exec(sql);
        },
      };
      await purgeDeletedConnection(watched, deleted(connectionId), logger);
      expect(await holdsRoot(tx)).toBe(true); // dropped its table: held until the commit, as it must be
    });
    // The statements that ran while every team's raw rows were locked: only the savepoint's release and
    // the lock_timeout's reset, after the drop of the connection's table (the period partitions' drops
    // and the rollups' DELETE came before it, without that lock).
    const locked = sent.findIndex((s) => s.rootLocked);
    expect(sent.slice(locked).map((s) => s.sql)).toEqual([
      'RELEASE SAVEPOINT purge_connection_table',
      expect.stringMatching(/^SELECT set_config\('lock_timeout'/),
    ]);
    expect(sent[locked - 1]!.sql).toMatch(/^DROP TABLE /);
    expect(sent.findIndex((s) => s.sql.includes('DELETE FROM daily_spend'))).toBeLessThan(locked);
    expect(await leftOf(connectionId)).toEqual({ periods: 0, tables: 0, rollups: 0 });
    expect(await leftOf(other)).toEqual({ periods: 1, tables: 2, rollups: 1 });
    expect(lines.find((line) => line.msg === 'purged deleted connection')).toMatchObject({
      connection_id: connectionId,
      partitions_dropped: 3,
      rollups_removed: 3,
    });
    // A redelivery finds nothing left.
    await db.transaction((tx) => purgeDeletedConnection(tx, deleted(connectionId), logger));
    expect(await leftOf(connectionId)).toEqual({ periods: 0, tables: 0, rollups: 0 });
  });

  it.runIf(setup === 'postgres')(
    'waits a bounded time for a busy root, then asks for redelivery; the next delivery purges',
    async () => {
      const connectionId = newId('connection');
      const other = newId('connection');
      await costDataOf(connectionId, ['2026-03-01']);
      await costDataOf(other, ['2026-03-01']);
      const { logger, lines } = captureLogger();
      // A reader of another connection's rows, in a long transaction: its lock on the root stays.
      let release!: () => void;
      const released = new Promise<void>((resolve) => (release = resolve));
      let reading!: () => void;
      const read = new Promise<void>((resolve) => (reading = resolve));
      const longReader = db.transaction(async (tx) => {
        await tx.query('SELECT count(*) FROM cost_records WHERE connection_id = $1', [other]);
        reading();
        await released;
      });
      await read;
      const started = performance.now();
      const purge = db.transaction((tx) =>
        purgeDeletedConnection(tx, deleted(connectionId), logger, {
          lockTimeoutMs: 200,
          attempts: 2,
          redeliverAfterMs: 5_000,
        }),
      );
      // Meanwhile readers of other connections are held up at most one lock_timeout at a time.
      const { rows } = await db.query<{ n: number }>(
        'SELECT count(*)::int AS n FROM cost_records WHERE connection_id = $1',
        [other],
      );
      expect(rows[0]!.n).toBe(1);
      const failure = await purge.then(
        () => undefined,
        (error: unknown) => error,
      );
      const elapsed = performance.now() - started;
      expect(failure).toBeInstanceOf(RedeliverLater);
      expect((failure as RedeliverLater).delayMs).toBe(5_000);
      expect(elapsed).toBeLessThan(3_000);
      expect(lines.some((line) => line.level === 'warn' && line.retry_in_ms === 5_000)).toBe(true);
      // Rolled back whole: the next delivery finds everything to purge.
      expect(await leftOf(connectionId)).toEqual({ periods: 1, tables: 2, rollups: 1 });
      release();
      await longReader;
      await db.transaction((tx) => purgeDeletedConnection(tx, deleted(connectionId), logger));
      expect(await leftOf(connectionId)).toEqual({ periods: 0, tables: 0, rollups: 0 });
      expect(await leftOf(other)).toEqual({ periods: 1, tables: 2, rollups: 1 });
    },
  );
});

import { setTimeout as sleep } from 'node:timers/promises';
import { decodeEvent, RedeliverLater, type CloudEvent } from '@costgov/bus';
import { events } from '@costgov/contracts';
import type { Queryable } from '@costgov/db';
import type { Logger } from '@costgov/log';

export interface PurgeOptions {
  /** How long the drop of the connection's table waits for the root's lock, each try. Default 1 s. */
  lockTimeoutMs?: number;
  /** Tries of that drop in one delivery before the event is redelivered later. Default 3. */
  attempts?: number;
  /** The redelivery's delay when every try found the root busy. Default 10 s. */
  redeliverAfterMs?: number;
}

/**
 * Removes a deleted connection's cost data: raw records (its partitions, dropped whole), its daily
 * rollup (daily_spend) and finished upload records. Spend stopped counting it when the
 * connection row went (the queries read only existing connections), so this only reclaims storage, away
 * from the DELETE request's deadline however many rows there are. An upload still loading ends on its
 * own (its swap finds no connection). Runs in the inbox transaction; a redelivery finds nothing left to
 * delete.
 *
 * The order keeps the root's lock short: the period partitions go first (each drop locks only the
 * connection's table, which nobody reads any more), then the rollups and upload records, and the
 * connection's table, empty by then, last, right before the commit: dropping a partition of the root
 * locks the root (every team's raw rows) until the commit. That drop waits at most `lockTimeoutMs` for
 * the lock (a waiting ACCESS EXCLUSIVE request queues every later reader behind it), is tried again a few
 * times, and when the root stays busy the event comes back later (RedeliverLater) to try again.
 */
export async function purgeDeletedConnection(
  tx: Queryable,
  event: CloudEvent,
  logger: Logger,
  options: PurgeOptions = {},
): Promise<void> {
  const { connectionId, teamId } = decodeEvent(events.ConnectionChangedSchema, event);
  // Only when the connection is really gone: ids are never reused, but a bad event must not purge live data.
  const { rows } = await tx.query('SELECT 1 FROM connections WHERE id = $1', [connectionId]);
  if (rows.length > 0) return;
  // The connection's advisory lock, as uploads and the retention sweep take it (held to the commit).
  await tx.query(`SELECT pg_advisory_xact_lock(hashtext('costs.cost_data'), hashtext($1))`, [connectionId]);
  const { rows: periods } = await tx.query<{ period: string }>(
    `SELECT to_char(billing_period_start, 'YYYY-MM-DD') AS period FROM cost_record_periods
     WHERE connection_id = $1 ORDER BY billing_period_start`,
    [connectionId],
  );
  let partitions = 0;
  for (const { period } of periods) {
    const { rows: dropped } = await tx.query<{ dropped: number }>(
      'SELECT cost_records_drop($1, $2::date) AS dropped',
      [connectionId, period],
    );
    partitions += Number(dropped[0]!.dropped);
  }
  const rollups = await tx.query('DELETE FROM daily_spend WHERE connection_id = $1', [connectionId]);
  await tx.query("DELETE FROM cost_uploads WHERE connection_id = $1 AND status <> 'loading'", [connectionId]);
  const fields = {
    connection_id: connectionId,
    team_id: teamId,
    partitions_dropped: partitions,
    rollups_removed: rollups.rowCount,
  };
  if (!(await dropConnectionTable(tx, connectionId, options))) {
    const retryInMs = options.redeliverAfterMs ?? 10_000;
    logger.warn(
      { ...fields, retry_in_ms: retryInMs },
      "purging a deleted connection: the raw rows' root stayed busy; trying again later",
    );
    throw new RedeliverLater(retryInMs, 'cost_records busy');
  }
  logger.info(fields, 'purged deleted connection');
}

/**
 * Drops the connection's (by now empty) table, a partition of the root, waiting at most `lockTimeoutMs`
 * for the root's lock per try. True when it is gone (or never was), false when the root stayed busy.
 */
async function dropConnectionTable(
  tx: Queryable,
  connectionId: string,
  { lockTimeoutMs = 1_000, attempts = 3 }: PurgeOptions,
): Promise<boolean> {
  const { rows } = await tx.query<{ name: string | null; previous: string }>(
    `SELECT to_regclass(quote_ident(cost_records_connection_table($1)))::text AS name,
       current_setting('lock_timeout') AS previous`,
    [connectionId],
  );
  const { name, previous } = rows[0]!;
  if (!name) return true;
  for (let attempt = 1; attempt <= attempts; attempt++) {
    await tx.exec('SAVEPOINT purge_connection_table');
    try {
      await tx.query(`SELECT set_config('lock_timeout', $1, true)`, [`${lockTimeoutMs}ms`]);
      // `name` is to_regclass's text: quoted where it needs to be.
      await tx.exec(`DROP TABLE ${name}`);
      await tx.exec('RELEASE SAVEPOINT purge_connection_table');
      await tx.query(`SELECT set_config('lock_timeout', $1, true)`, [previous]);
      return true;
    } catch (error) {
      // Rolling back to the savepoint also restores lock_timeout.
      await tx.exec('ROLLBACK TO SAVEPOINT purge_connection_table');
      if (!lockNotAvailable(error)) throw error;
      if (attempt < attempts) await sleep(lockTimeoutMs);
    }
  }
  return false;
}

/** Postgres's lock_not_available (55P03): lock_timeout ran out. */
function lockNotAvailable(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  const cause = (error as { cause?: { code?: unknown } } | null)?.cause?.code;
  return code === '55P03' || cause === '55P03';
}

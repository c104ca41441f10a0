import type { Outbox } from '@costgov/bus';
import type { Db } from '@costgov/db';
import type { Logger } from '@costgov/log';
import { publishScanFinished } from './finished';
import type { ScanRow } from './scan';

/**
 * Fails scans `running` whose workers went quiet for longer than `staleMs` (the queue gave up on them, or
 * nobody is left to take them over); their refund follows from scanner.scan.failed. A sharded scan is
 * quiet when neither it nor any of its shards reported within `staleMs`; one with a shard still waiting
 * in the queue, or every shard stored and its merge waiting in the queue, is not (as a `pending` scan is
 * not). Every process may sweep: the conditional UPDATE fails each scan once.
 */
export function scanSweeper({
  db,
  outbox,
  now,
  logger,
  staleMs,
}: {
  db: Db;
  outbox: Outbox;
  now: () => Date;
  logger: Logger;
  staleMs: number;
}) {
  let timer: NodeJS.Timeout | undefined;
  let sweeping: Promise<unknown> = Promise.resolve();

  async function sweep(): Promise<number> {
    return db.transaction(async (tx) => {
      const at = now();
      const { rows } = await tx.query<ScanRow>(
        `UPDATE scans SET status = 'failed', credits_used = 0, completed_at = $1, updated_at = $1,
           error = 'The scan stopped reporting progress (its worker is gone) and was given up.'
         WHERE id IN (SELECT id FROM scans s WHERE status = 'running' AND heartbeat_at < $2
                        AND NOT EXISTS (SELECT 1 FROM scan_shards sh WHERE sh.scan_id = s.id
                                        AND (sh.heartbeat_at >= $2 OR sh.status = 'pending'))
                        AND NOT (s.shards_total > 0 AND s.worker_id IS NULL
                                 AND NOT EXISTS (SELECT 1 FROM scan_shards sh WHERE sh.scan_id = s.id
                                                 AND sh.status <> 'done'))
                      ORDER BY id FOR UPDATE SKIP LOCKED)
         RETURNING *`,
        [at, new Date(at.getTime() - staleMs)],
      );
      for (const row of rows) await publishScanFinished(outbox, tx, row);
      if (rows.length > 0) logger.warn({ scan_ids: rows.map((r) => r.id) }, 'stale scans failed');
      return rows.length;
    });
  }

  return {
    sweep,
    start(intervalMs: number) {
      timer = setInterval(() => {
        sweeping = sweep().catch((error: unknown) => logger.warn({ err: error }, 'scan sweep failed'));
      }, intervalMs);
      timer.unref();
    },
    async stop() {
      clearInterval(timer);
      await sweeping;
    },
  };
}

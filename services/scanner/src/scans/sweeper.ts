import type { Outbox } from '@costgov/bus';
import type { Db } from '@costgov/db';
import type { Logger } from '@costgov/log';
import { publishScanFinished } from './finished';
import { requestMerge, requestScan, requestShard } from './requests';
import type { ScanRow } from './scan';

/** When a scan last made progress: its own heartbeat or any of its shards' (stored, reported, released). */
const lastProgress = `greatest(s.heartbeat_at,
  (SELECT max(sh.heartbeat_at) FROM scan_shards sh WHERE sh.scan_id = s.id))`;
/** A scan whose work waits in the queue: a shard not taken yet, or every shard stored and the merge not. */
const waiting = `(EXISTS (SELECT 1 FROM scan_shards sh WHERE sh.scan_id = s.id AND sh.status = 'pending')
  OR (s.shards_total > 0 AND s.worker_id IS NULL
      AND NOT EXISTS (SELECT 1 FROM scan_shards sh WHERE sh.scan_id = s.id AND sh.status <> 'done')))`;

/**
 * Whether a shard or scan re-published at `requeued_at` may be again: once `requeueAfterMs` ($3) has
 * passed and, while it still waits, as long again as it had waited before that (the gap doubles, at most
 * `maxSpacingMs`, $4): a shard waiting behind a long backlog adds a few messages to the queue, not one
 * every period. `since`: when its wait began (its last heartbeat; for a pending scan, its creation).
 */
const requeueDue = (row: string, since = `${row}.heartbeat_at`) => `(${row}.requeued_at IS NULL
  OR $1::timestamptz - ${row}.requeued_at >= greatest($3::bigint * interval '1 millisecond',
       least(${row}.requeued_at - ${since}, $4::bigint * interval '1 millisecond')))`;

const quietError = 'The scan stopped reporting progress (its worker is gone) and was given up.';
const stuckError = (maxQuietMs: number) =>
  `The scan made no progress for ${Math.round(maxQuietMs / 60_000)} min (its work waited in the queue ` +
  'and was never taken) and was given up; its credits are refunded. Start it again.';

/**
 * Keeps every `running` scan moving or ends it, once:
 *
 * - reconcile(): a scan still `pending` (no worker took its request), a shard queued or released (no
 *   live run) for longer than `requeueAfterMs`, or a scan whose shards are all stored and whose merge
 *   nobody took for as long, has its message re-published through the outbox
 *   (`scanner.scan.requested`, `scanner.scan_shard.requested`, `scanner.scan_merge.requested`), again after
 *   `requeueAfterMs` at the earliest and then at doubling gaps while it still waits (a backlog). Messages get lost: an old worker consuming the same durable for other
 *   types during a rolling deploy acks and drops them, an old pod narrows the durable's filter, the
 *   stream's max age drops them. Claims are conditional, so a duplicate is harmless.
 * - sweep(): fails scans whose workers went quiet for longer than `staleMs` (the queue gave up on them,
 *   or nobody is left to take them over) and, whatever waits in the queue, scans with no progress at all
 *   (no heartbeat of theirs or of any shard, no shard stored; a `pending` scan since it was created) for
 *   `maxQuietMs`. The refund follows from
 *   scanner.scan.failed; the failed scan's shards give up what they kept for the merge. A scan with a
 *   shard still waiting in the queue, or every shard stored and its merge waiting, is left to the
 *   reconciler until `maxQuietMs` (as a `pending` scan is).
 *
 * Every process may run it: the conditional UPDATEs re-publish and fail each scan once.
 */
export function scanSweeper({
  db,
  outbox,
  now,
  logger,
  staleMs,
  requeueAfterMs = staleMs,
  maxQuietMs = staleMs * 10,
}: {
  db: Db;
  outbox: Outbox;
  now: () => Date;
  logger: Logger;
  staleMs: number;
  /** A shard or merge left untaken this long is re-published (a few SCAN_ACK_WAIT_MS), then at doubling gaps. */
  requeueAfterMs?: number;
  /** A running scan without any progress this long is failed, waiting work or not (SCAN_MAX_QUIET_MS). */
  maxQuietMs?: number;
}) {
  let timer: NodeJS.Timeout | undefined;
  let sweeping: Promise<unknown> = Promise.resolve();

  async function sweep(): Promise<number> {
    return db.transaction(async (tx) => {
      const at = now();
      const { rows } = await tx.query<ScanRow>(
        `UPDATE scans SET status = 'failed', credits_used = 0, completed_at = $1, updated_at = $1,
           error = CASE WHEN q.waiting THEN $4 ELSE $5 END
         FROM (SELECT s.id, s.status = 'pending' OR ${waiting} AS waiting FROM scans s
               WHERE (s.status = 'running' AND ${lastProgress} < $2
                      AND (${lastProgress} < $3 OR NOT ${waiting}))
                  -- Never taken by a worker since it was created: its request waited in the queue.
                  OR (s.status = 'pending' AND s.created_at < $3)
               ORDER BY s.id FOR UPDATE SKIP LOCKED) q
         WHERE scans.id = q.id AND scans.status IN ('running', 'pending')
         RETURNING scans.*`,
        [
          at,
          new Date(at.getTime() - staleMs),
          new Date(at.getTime() - maxQuietMs),
          stuckError(maxQuietMs),
          quietError,
        ],
      );
      if (rows.length === 0) return 0;
      const ids = rows.map((r) => r.id);
      // Nothing will merge them now.
      await tx.query(
        'UPDATE scan_shards SET results = NULL, resource_ids = NULL, pending = NULL WHERE scan_id = ANY($1)',
        [ids],
      );
      await tx.query('DELETE FROM scan_plans WHERE scan_id = ANY($1)', [ids]);
      for (const row of rows) await publishScanFinished(outbox, tx, row);
      logger.warn({ scan_ids: ids }, 'stale scans failed');
      return rows.length;
    });
  }

  async function reconcile(): Promise<{ plans: number; shards: number; merges: number }> {
    return db.transaction(async (tx) => {
      const at = now();
      const before = new Date(at.getTime() - requeueAfterMs);
      const maxSpacingMs = Math.max(requeueAfterMs, Math.floor(maxQuietMs / 4));
      // A scan no worker took since it was created, for requeueAfterMs: its request may be lost.
      const plans = await tx.query<ScanRow>(
        `UPDATE scans s SET requeued_at = $1
         WHERE s.status = 'pending' AND s.created_at < $2 AND ${requeueDue('s', 's.created_at')}
         RETURNING s.*`,
        [at, before, requeueAfterMs, maxSpacingMs],
      );
      for (const scan of plans.rows) {
        await requestScan(outbox, tx, {
          scanId: scan.id,
          teamId: scan.team_id,
          projectId: scan.project_id,
          connectionIds: scan.connection_ids,
          credits: scan.credits_used,
        });
      }
      // A shard nobody holds (queued, released) or whose run went silent, untouched for requeueAfterMs.
      const shards = await tx.query<{
        scan_id: string;
        shard_index: number;
        shard_count: number;
        team_id: string;
        project_id: string;
      }>(
        `UPDATE scan_shards sh SET requeued_at = $1
         FROM scans s
         WHERE s.id = sh.scan_id AND s.status = 'running' AND s.shards_total > 1
           AND sh.status IN ('pending', 'running') AND sh.heartbeat_at < $2 AND ${requeueDue('sh')}
         RETURNING sh.scan_id, sh.shard_index, sh.shard_count, s.team_id, s.project_id`,
        [at, before, requeueAfterMs, maxSpacingMs],
      );
      for (const shard of shards.rows) {
        await requestShard(outbox, tx, {
          scanId: shard.scan_id,
          teamId: shard.team_id,
          projectId: shard.project_id,
          shardIndex: shard.shard_index,
          shardCount: shard.shard_count,
        });
      }
      // Every shard stored, and neither the scan nor a shard touched since: the merge was never taken.
      const merges = await tx.query<ScanRow>(
        `UPDATE scans s SET requeued_at = $1
         WHERE s.status = 'running' AND s.shards_total > 1 AND s.heartbeat_at < $2 AND ${requeueDue('s')}
           AND NOT EXISTS (SELECT 1 FROM scan_shards sh WHERE sh.scan_id = s.id
                           AND (sh.status <> 'done' OR sh.heartbeat_at >= $2))
         RETURNING s.*`,
        [at, before, requeueAfterMs, maxSpacingMs],
      );
      for (const scan of merges.rows) {
        await requestMerge(outbox, tx, {
          scanId: scan.id,
          teamId: scan.team_id,
          projectId: scan.project_id,
          shardCount: scan.shards_total,
        });
      }
      const counts = { plans: plans.rows.length, shards: shards.rows.length, merges: merges.rows.length };
      if (counts.plans + counts.shards + counts.merges > 0)
        logger.warn(
          {
            plans: plans.rows.map((s) => s.id),
            shards: shards.rows.map((s) => `${s.scan_id}#${s.shard_index}`),
            merges: merges.rows.map((s) => s.id),
          },
          'lost scan work queued again',
        );
      return counts;
    });
  }

  return {
    sweep,
    reconcile,
    start(intervalMs: number) {
      timer = setInterval(() => {
        sweeping = reconcile()
          .then(sweep)
          .catch((error: unknown) => logger.warn({ err: error }, 'scan sweep failed'));
      }, intervalMs);
      timer.unref();
    },
    async stop() {
      clearInterval(timer);
      await sweeping;
    },
  };
}

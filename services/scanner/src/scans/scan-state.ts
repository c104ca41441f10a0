import type { Outbox } from '@costgov/bus';
import type { Db } from '@costgov/db';
import { truncateChars } from '@costgov/errors';
import type { IdGenerator } from '@costgov/ids';
import { recordFindings, type RuleResult } from '../findings/record';
import { maxErrorChars, publishScanFinished } from './finished';
import { requestMerge, requestShard } from './requests';
import type { ShardOutcome, ShardSpec } from './run-rules';
import type { ScanRow } from './scan';

export interface ScanStateDeps {
  db: Db;
  outbox: Outbox;
  newId: IdGenerator;
  now: () => Date;
  /** How old a scan's or shard's heartbeat is when its worker is taken for lost: another may take it over. */
  takeoverMs: number;
}

/** What one run holds: the scan row (planning, merging), one shard row, or both (a one-shard scan). */
export interface Holding {
  scanId: string;
  runId: string;
  scan: boolean;
  shard?: number;
}

export interface ShardRow {
  status: string;
  worker_id: string | null;
}

/**
 * The scan and shard state transitions, each one statement or transaction: who holds a scan or a shard
 * (a conditional UPDATE), what a run stores, releases or fails, and the reads the worker decides on.
 * Every write names the run, so a run taken over or swept stores nothing.
 */
export function scanState({ db, outbox, newId, now, takeoverMs }: ScanStateDeps) {
  const stale = (at: Date) => new Date(at.getTime() - takeoverMs);

  async function claimScan(scanId: string, runId: string): Promise<ScanRow | undefined> {
    const at = now();
    const { rows } = await db.query<ScanRow>(
      `UPDATE scans SET status = 'running', worker_id = $2, heartbeat_at = $3,
         started_at = coalesce(started_at, $3), updated_at = $3
       WHERE id = $1 AND (status = 'pending'
                          OR (status = 'running' AND (worker_id IS NULL OR heartbeat_at < $4)))
       RETURNING *`,
      [scanId, runId, at, stale(at)],
    );
    return rows[0];
  }

  /**
   * Takes a shard of a running scan: queued, released for a retry, or held by a run gone quiet. Its range
   * of resource ids as planned; undefined when not taken.
   */
  async function claimShard(
    scanId: string,
    index: number,
    runId: string,
  ): Promise<{ from?: string; to?: string } | undefined> {
    const at = now();
    const { rows } = await db.query<{ resource_id_from: string | null; resource_id_to: string | null }>(
      `UPDATE scan_shards SET status = 'running', worker_id = $3, heartbeat_at = $4,
         started_at = coalesce(started_at, $4)
       WHERE scan_id = $1 AND shard_index = $2
         AND (status = 'pending' OR (status = 'running' AND (worker_id IS NULL OR heartbeat_at < $5)))
         AND EXISTS (SELECT 1 FROM scans WHERE id = $1 AND status = 'running')
       RETURNING resource_id_from, resource_id_to`,
      [scanId, index, runId, at, stale(at)],
    );
    const row = rows[0];
    if (!row) return undefined;
    return {
      ...(row.resource_id_from !== null ? { from: row.resource_id_from } : {}),
      ...(row.resource_id_to !== null ? { to: row.resource_id_to } : {}),
    };
  }

  /**
   * Stores a scan's plan, held by `runId`: its window and clock, and its shards. One shard stays with
   * this run (it runs it at once); more are queued for any worker and the scan is let go.
   */
  async function storePlan(
    scan: ScanRow,
    runId: string,
    plan: { windowEnd: Date; now: Date; shards: ShardSpec[]; context?: unknown },
  ): Promise<ScanRow | undefined> {
    return db.transaction(async (tx) => {
      const at = now();
      const one = plan.shards.length === 1;
      const { rows } = await tx.query<ScanRow>(
        `UPDATE scans SET window_end = $3, planned_now = $4, shards_total = $5, heartbeat_at = $6,
           updated_at = $6, worker_id = CASE WHEN $5 = 1 THEN worker_id END
         WHERE id = $1 AND worker_id = $2 AND status = 'running' RETURNING *`,
        [scan.id, runId, plan.windowEnd, plan.now, plan.shards.length, at],
      );
      if (!rows[0]) return undefined; // swept or taken over meanwhile
      if (plan.context !== undefined)
        await tx.query(
          `INSERT INTO scan_plans (scan_id, context) VALUES ($1, $2::jsonb)
           ON CONFLICT (scan_id) DO UPDATE SET context = excluded.context`,
          [scan.id, JSON.stringify(plan.context)],
        );
      await tx.query(
        `INSERT INTO scan_shards (scan_id, shard_index, shard_count, status, worker_id, heartbeat_at, started_at,
           resource_id_from, resource_id_to)
         SELECT $1, i - 1, $2, $3, $4, $5, $6, ($7::text[])[i], ($8::text[])[i] FROM generate_series(1, $2) AS i`,
        [
          scan.id,
          plan.shards.length,
          one ? 'running' : 'pending',
          one ? runId : null,
          at,
          one ? at : null,
          plan.shards.map((shard) => shard.from ?? null),
          plan.shards.map((shard) => shard.to ?? null),
        ],
      );
      if (!one) {
        for (let index = 0; index < plan.shards.length; index++) {
          await requestShard(outbox, tx, {
            scanId: scan.id,
            teamId: scan.team_id,
            projectId: scan.project_id,
            shardIndex: index,
            shardCount: plan.shards.length,
          });
        }
      }
      return rows[0];
    });
  }

  /**
   * Stores a shard's outcome once, by the run holding it, with the scan locked so that exactly one
   * transaction sees every shard stored. `last` when it was the last: the merge is queued (or, for the
   * run holding the scan itself, left to it).
   */
  async function storeShard(
    scan: ScanRow,
    shard: ShardSpec,
    runId: string,
    outcome: ShardOutcome,
    queueMerge: boolean,
  ): Promise<'stored' | 'last' | 'lost'> {
    return db.transaction(async (tx) => {
      const at = now();
      const locked = await tx.query<{ status: string }>('SELECT status FROM scans WHERE id = $1 FOR UPDATE', [
        scan.id,
      ]);
      if (locked.rows[0]?.status !== 'running') return 'lost'; // failed or swept meanwhile
      const stored = await tx.query(
        `UPDATE scan_shards SET status = 'done', resources_scanned = $4, results = $5::jsonb, resource_ids = $6,
           pending = $8::jsonb, heartbeat_at = $7, completed_at = $7, retry_since = NULL
         WHERE scan_id = $1 AND shard_index = $2 AND worker_id = $3 AND status = 'running'
         RETURNING shard_index`,
        [
          scan.id,
          shard.index,
          runId,
          outcome.resourcesScanned,
          JSON.stringify(outcome.results),
          outcome.resourceIds,
          at,
          outcome.pending === undefined ? null : JSON.stringify(outcome.pending),
        ],
      );
      if (stored.rows.length === 0) return 'lost'; // taken over: that run stores it
      const { rows } = await tx.query<{ done: number }>(
        `SELECT count(*)::int AS done FROM scan_shards WHERE scan_id = $1 AND status = 'done'`,
        [scan.id],
      );
      // A shard stored: the plan is behind the scan; a later outage of the merge counts from its own start.
      await tx.query(
        'UPDATE scans SET heartbeat_at = $2, updated_at = $2, retry_since = NULL WHERE id = $1',
        [scan.id, at],
      );
      if (rows[0]!.done < scan.shards_total) return 'stored';
      if (queueMerge) {
        await requestMerge(outbox, tx, {
          scanId: scan.id,
          teamId: scan.team_id,
          projectId: scan.project_id,
          shardCount: scan.shards_total,
        });
      }
      return 'last';
    });
  }

  /**
   * Completes a scan held by `runId` whose every shard is stored: its findings are every shard's results
   * and the project-wide ones, recorded once against every resource the shards read.
   */
  async function complete(scan: ScanRow, runId: string, projectResults: RuleResult[]): Promise<boolean> {
    return db.transaction(async (tx) => {
      const at = now();
      const { rows } = await tx.query<ScanRow>(
        `UPDATE scans SET status = 'completed', completed_at = $3, heartbeat_at = $3, updated_at = $3,
           resources_scanned = (SELECT coalesce(sum(resources_scanned), 0)::int FROM scan_shards WHERE scan_id = $1)
         WHERE id = $1 AND worker_id = $2 AND status = 'running'
           AND NOT EXISTS (SELECT 1 FROM scan_shards WHERE scan_id = $1 AND status <> 'done')
         RETURNING *`,
        [scan.id, runId, at],
      );
      if (!rows[0]) return false; // swept or taken over meanwhile: that outcome stands
      const shards = await tx.query<{ results: RuleResult[] | null; resource_ids: string[] | null }>(
        'SELECT results, resource_ids FROM scan_shards WHERE scan_id = $1 ORDER BY shard_index',
        [scan.id],
      );
      const results = shards.rows.flatMap((shard) => shard.results ?? []).concat(projectResults);
      const resourceIds = shards.rows.flatMap((shard) => shard.resource_ids ?? []);
      const { findingsCount } = await recordFindings(
        tx,
        { outbox, newId, now },
        { teamId: scan.team_id, projectId: scan.project_id, scanId: scan.id, results, resourceIds },
      );
      await tx.query('UPDATE scans SET findings_count = $2 WHERE id = $1', [scan.id, findingsCount]);
      // The findings hold them now: the shards' copies would only weigh on the table.
      await tx.query(
        'UPDATE scan_shards SET results = NULL, resource_ids = NULL, pending = NULL WHERE scan_id = $1',
        [scan.id],
      );
      await tx.query('DELETE FROM scan_plans WHERE scan_id = $1', [scan.id]);
      await publishScanFinished(outbox, tx, { ...rows[0], findings_count: findingsCount });
      return true;
    });
  }

  /**
   * Hands what a run holds back to the queue for a retry: no run holds it (any worker may claim it at
   * once), and its heartbeat is now, so the sweeper leaves it alone while the retry waits (the wait is
   * far shorter than SCAN_STALE_MS). `outage`: released for a retry, whose deadline counts from the
   * first outage of what it works on (the shard it holds, else the scan's plan or merge): `retry_since`
   * keeps it. False when it was swept or taken over meanwhile.
   */
  async function release(holding: Holding, scanned: number, outage = false): Promise<boolean> {
    const at = now();
    let held = true;
    if (holding.shard !== undefined) {
      const { rows } = await db.query(
        `UPDATE scan_shards SET worker_id = NULL, heartbeat_at = $4, resources_scanned = $5,
           retry_since = CASE WHEN $6 THEN coalesce(retry_since, $4) ELSE retry_since END
         WHERE scan_id = $1 AND shard_index = $2 AND worker_id = $3 AND status = 'running' RETURNING shard_index`,
        [holding.scanId, holding.shard, holding.runId, at, scanned, outage],
      );
      held = rows.length > 0;
    }
    if (holding.scan) {
      const { rows } = await db.query(
        `UPDATE scans SET worker_id = NULL, heartbeat_at = $3, updated_at = $3,
           retry_since = CASE WHEN $4 THEN coalesce(retry_since, $3) ELSE retry_since END
         WHERE id = $1 AND worker_id = $2 AND status = 'running' RETURNING id`,
        [holding.scanId, holding.runId, at, outage && holding.shard === undefined],
      );
      held &&= rows.length > 0;
    }
    return held;
  }

  /** Fails the scan, once, if this run still holds what it worked on; the refund follows the event. */
  async function fail(holding: Holding, error: string): Promise<boolean> {
    const message = truncateChars(error, maxErrorChars);
    return db.transaction(async (tx) => {
      const at = now();
      // The scan first, then its shard, in the order storeShard and complete take them.
      await tx.query('SELECT 1 FROM scans WHERE id = $1 FOR UPDATE', [holding.scanId]);
      if (holding.shard !== undefined) {
        const { rows } = await tx.query(
          `UPDATE scan_shards SET status = 'failed', heartbeat_at = $4, completed_at = $4
           WHERE scan_id = $1 AND shard_index = $2 AND worker_id = $3 AND status = 'running'
           RETURNING shard_index`,
          [holding.scanId, holding.shard, holding.runId, at],
        );
        if (rows.length === 0) return false; // taken over: that run decides
      }
      const { rows } = await tx.query<ScanRow>(
        `UPDATE scans SET status = 'failed', error = $3, credits_used = 0, completed_at = $4, updated_at = $4
         WHERE id = $1 AND status = 'running' AND ($5 = false OR worker_id = $2) RETURNING *`,
        [holding.scanId, holding.runId, message || 'The scan failed.', at, holding.scan],
      );
      if (!rows[0]) return false;
      // Nothing will merge them now.
      await tx.query(
        'UPDATE scan_shards SET results = NULL, resource_ids = NULL, pending = NULL WHERE scan_id = $1',
        [holding.scanId],
      );
      await tx.query('DELETE FROM scan_plans WHERE scan_id = $1', [holding.scanId]);
      // The refund follows from scanner.scan.failed (see refund-failed.ts), so it survives a crash here.
      await publishScanFinished(outbox, tx, rows[0]);
      return true;
    });
  }

  /**
   * When what `holding` works on first met an outage in its current series of retries (the shard it
   * holds, else the scan's plan or merge); now for a first outage. Undefined when no longer held.
   */
  async function outageSince(holding: Holding, at: Date): Promise<Date | undefined> {
    const { rows } =
      holding.shard !== undefined
        ? await db.query<{ retry_since: Date | null }>(
            `SELECT retry_since FROM scan_shards WHERE scan_id = $1 AND shard_index = $2 AND worker_id = $3`,
            [holding.scanId, holding.shard, holding.runId],
          )
        : await db.query<{ retry_since: Date | null }>(
            'SELECT retry_since FROM scans WHERE id = $1 AND worker_id = $2',
            [holding.scanId, holding.runId],
          );
    if (!rows[0]) return undefined;
    return rows[0].retry_since ?? at;
  }

  async function statusOf(scanId: string): Promise<string | undefined> {
    const { rows } = await db.query<{ status: string }>('SELECT status FROM scans WHERE id = $1', [scanId]);
    return rows[0]?.status;
  }

  async function shardsDone(scanId: string): Promise<ShardRow[]> {
    const { rows } = await db.query<ShardRow>(
      'SELECT status, worker_id FROM scan_shards WHERE scan_id = $1 ORDER BY shard_index',
      [scanId],
    );
    return rows;
  }

  /** Writes the heartbeat of what `holding` holds, and `scanned`: the resources its shard judged so far. */
  function beat(holding: Holding, scanned: number): Promise<unknown> {
    const at = now();
    const beats: Array<Promise<unknown>> = [];
    if (holding.scan)
      beats.push(
        db.query(
          `UPDATE scans SET heartbeat_at = $3, updated_at = $3
           WHERE id = $1 AND worker_id = $2 AND status = 'running'`,
          [holding.scanId, holding.runId, at],
        ),
      );
    if (holding.shard !== undefined)
      beats.push(
        db.query(
          // Resources judged by this run: its dependencies answer, so a later outage is a new one.
          `UPDATE scan_shards SET heartbeat_at = $4, resources_scanned = $5,
             retry_since = CASE WHEN $5 > 0 THEN NULL ELSE retry_since END
           WHERE scan_id = $1 AND shard_index = $2 AND worker_id = $3 AND status = 'running'`,
          [holding.scanId, holding.shard, holding.runId, at, scanned],
        ),
      );
    return Promise.all(beats);
  }

  /** The context the runner planned a scan with (its scan_plans row); undefined when it stored none. */
  async function planOf(scanId: string): Promise<{ context: unknown } | undefined> {
    const { rows: plans } = await db.query<{ context: unknown }>(
      'SELECT context FROM scan_plans WHERE scan_id = $1',
      [scanId],
    );
    return plans[0];
  }

  /** What a scan's shards left to the merge, in shard order, as JSON. */
  async function pendingOf(scanId: string): Promise<unknown[]> {
    const { rows } = await db.query<{ pending: unknown }>(
      'SELECT pending FROM scan_shards WHERE scan_id = $1 AND pending IS NOT NULL ORDER BY shard_index',
      [scanId],
    );
    return rows.map((row) => row.pending);
  }

  /** A shard's status and its scan's; undefined when there is no such shard. */
  async function shardStatusOf(
    scanId: string,
    index: number,
  ): Promise<{ status: string; scan_status: string } | undefined> {
    const { rows } = await db.query<{ status: string; scan_status: string }>(
      `SELECT sh.status, s.status AS scan_status FROM scan_shards sh JOIN scans s ON s.id = sh.scan_id
         WHERE sh.scan_id = $1 AND sh.shard_index = $2`,
      [scanId, index],
    );
    return rows[0];
  }

  async function scanOf(scanId: string): Promise<ScanRow | undefined> {
    const { rows } = await db.query<ScanRow>('SELECT * FROM scans WHERE id = $1', [scanId]);
    return rows[0];
  }

  return {
    claimScan,
    claimShard,
    storePlan,
    storeShard,
    complete,
    release,
    fail,
    outageSince,
    statusOf,
    shardsDone,
    beat,
    planOf,
    pendingOf,
    shardStatusOf,
    scanOf,
  };
}

export type ScanState = ReturnType<typeof scanState>;

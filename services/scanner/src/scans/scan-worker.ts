import { randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import {
  decodeEvent,
  RedeliverLater,
  type Bus,
  type Consumer,
  type DeliveryInfo,
  type Outbox,
} from '@costgov/bus';
import { events } from '@costgov/contracts';
import type { Db } from '@costgov/db';
import { truncateChars } from '@costgov/errors';
import type { IdGenerator } from '@costgov/ids';
import type { Logger } from '@costgov/log';
import { recordFindings, type RuleResult } from '../findings/record';
import { maxErrorChars, publishScanFinished } from './finished';
import { requestMerge, requestShard } from './requests';
import { isDependencyOutage, reasonOf, retryWait, type RetryPolicy } from './retry';
import type { PlannedScan, ScanRunner, ScanWork, ShardOutcome, ShardSpec } from './run-rules';
import type { ScanRow } from './scan';
import { shardCount } from './shards';

export interface ScanWorkerOptions {
  db: Db;
  bus: Bus;
  outbox: Outbox;
  newId: IdGenerator;
  now: () => Date;
  logger: Logger;
  runner: ScanRunner;
  /** How a scan is split: resources per shard (SCAN_SHARD_RESOURCES), at most maxShards (SCAN_MAX_SHARDS). */
  sharding: { perShard: number; maxShards: number };
  /** How often a running scan or shard is reported (heartbeat_at and a `working` ack). */
  heartbeatMs: number;
  /** How long the queue waits for an ack or a heartbeat before another worker gets the message. */
  ackWaitMs: number;
  /** Messages (plans, shards, merges) this process works on at once. */
  concurrency: number;
  /** How a scan whose dependency is unavailable is tried again, and until when. */
  retry: RetryPolicy;
}

/** Every worker process consumes under this one durable name, so the queue splits the work between them. */
export const scanWorkersDurable = 'scanner_scan_workers';

/**
 * What the scan workers' queue carries: a scan to plan (scanner.scan.requested), one of its shards
 * (scanner.scan_shard.requested), its merge (scanner.scan_merge.requested). One pattern, so the
 * consumer's broker-side filter is these three alone (libs/bus filterOf) and its lag, which the
 * autoscaler reads, counts scan work only.
 */
export const scanQueueTypes = ['scanner.*.requested'];

/** A scan or shard whose heartbeat is older than this many heartbeats lost its worker: another may take it over. */
const missedHeartbeats = 3;

/** Raised when a scan or shard is held elsewhere by a live worker: the message comes back later. */
class RunningElsewhere extends Error {}

const messageOf = (error: unknown) => (error instanceof Error ? error.message : String(error));

/** A failed scan's `error` when a dependency stayed away past the retry deadline (users read it). */
const gaveUp = (deadlineMs: number) =>
  `A service the scan reads from stayed unavailable for more than ${deadlineMs / 1000} s; ` +
  'its credits are refunded. Start the scan again once the service is back.';

/** What one run holds: the scan row (planning, merging), one shard row, or both (a one-shard scan). */
interface Holding {
  scanId: string;
  runId: string;
  scan: boolean;
  shard?: number;
}

interface ShardRow {
  status: string;
  worker_id: string | null;
}

const plannedOf = (scan: ScanRow): PlannedScan => ({
  scanId: scan.id,
  teamId: scan.team_id,
  projectId: scan.project_id,
  connectionIds: scan.connection_ids,
  windowEnd: scan.window_end!,
  now: scan.planned_now!,
});

/**
 * The worker side: takes the scan work queue's messages. `scanner.scan.requested` plans the scan (how
 * many resources, the window and clock every shard shares) and splits it into shards: one shard is run
 * at once by the planning worker, more are queued as `scanner.scan_shard.requested` for any worker. The
 * transaction that stores a shard's outcome locks the scan and, when it is the last, queues
 * `scanner.scan_merge.requested` (or the one-shard planner merges at once): the merge runs the
 * project-wide rules, records every shard's findings together and completes the scan, once.
 *
 * A conditional UPDATE decides who holds a scan or a shard (pending, running with a stale heartbeat, or
 * released for a retry), and every later write names the run, so work taken over or swept is never
 * stored by its earlier run. A run that meets an unavailable dependency releases what it holds and has
 * its message redelivered after a backoff, until the scan's retry deadline; any other failure fails the
 * scan at once (and refunds it), once.
 */
export async function startScanWorker(options: ScanWorkerOptions): Promise<Consumer> {
  const { db, bus, outbox, newId, now, logger, runner, heartbeatMs, retry, sharding } = options;
  const log = logger.child({ component: 'scan-worker' });
  const takeoverMs = heartbeatMs * missedHeartbeats;
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

  /**
   * After a run failed: an outage within the retry deadline of what it works on (counted from that
   * shard's, plan's or merge's first outage) releases what the run holds and
   * throws RedeliverLater (the bus brings the message back after the wait); anything else fails the scan.
   */
  async function retryOrFail(
    error: unknown,
    attempt: {
      holding: Holding;
      info: DeliveryInfo;
      scanned: number;
      fields: Record<string, unknown>;
    },
  ): Promise<void> {
    const { holding, fields } = attempt;
    const outage = isDependencyOutage(error);
    const at = now();
    const since = outage ? await outageSince(holding, at) : undefined;
    const waitMs =
      since === undefined
        ? undefined
        : retryWait(retry, { since, deliveryCount: attempt.info.deliveryCount, now: at });
    if (waitMs === undefined) {
      log.warn({ ...fields, err: error }, 'scan failed');
      await fail(holding, outage ? gaveUp(retry.deadlineMs) : messageOf(error));
      return;
    }
    if (!(await release(holding, attempt.scanned, true))) return; // swept or taken over meanwhile
    const reason = reasonOf(error);
    log.warn({ ...fields, reason, retry_in_ms: waitMs }, 'scan waits for an unavailable dependency');
    throw new RedeliverLater(waitMs, `Scan ${holding.scanId} waits for a dependency: ${reason}`, {
      cause: error,
    });
  }

  /**
   * Runs `work` while reporting what `holding` holds every heartbeat (and `progress`, the resources a
   * held shard judged so far); a failure goes through retryOrFail.
   */
  async function holdWhile(
    holding: Holding,
    scan: ScanRow,
    info: DeliveryInfo,
    work: (progress: (resources: number) => void) => Promise<void>,
  ): Promise<void> {
    const fields = {
      scan_id: holding.scanId,
      team_id: scan.team_id,
      run_id: holding.runId,
      shard: holding.shard,
      delivery: info.deliveryCount,
    };
    let scanned = 0;
    const heartbeat = setInterval(() => {
      info.working();
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
      Promise.all(beats).catch((error: unknown) =>
        log.warn({ ...fields, err: error }, 'scan heartbeat failed'),
      );
    }, heartbeatMs);
    try {
      await work((resources) => (scanned = resources));
    } catch (error) {
      if (error instanceof RunningElsewhere) throw error;
      await retryOrFail(error, { holding, info, scanned, fields });
    } finally {
      clearInterval(heartbeat);
    }
  }

  /** Runs one shard held by `runId` and stores its outcome; `last` when it completed the set. */
  async function runShard(
    scan: ScanRow,
    shard: ShardSpec,
    runId: string,
    progress: (resources: number) => void,
    queueMerge: boolean,
  ) {
    const { rows: plans } = await db.query<{ context: unknown }>(
      'SELECT context FROM scan_plans WHERE scan_id = $1',
      [scan.id],
    );
    const planned = plans[0] ? { ...plannedOf(scan), context: plans[0].context } : plannedOf(scan);
    const outcome = await runner.runShard(planned, shard, progress);
    const stored = await storeShard(scan, shard, runId, outcome, queueMerge);
    log.info(
      {
        scan_id: scan.id,
        run_id: runId,
        shard: shard.index,
        shards: shard.count,
        resources_scanned: outcome.resourcesScanned,
        stored,
      },
      'scan shard finished',
    );
    return stored;
  }

  /** The merge, by the run holding the scan: the project-wide rules, then the scan completed once. */
  async function merge(scan: ScanRow, runId: string): Promise<void> {
    const { rows } = await db.query<{ pending: unknown }>(
      'SELECT pending FROM scan_shards WHERE scan_id = $1 AND pending IS NOT NULL ORDER BY shard_index',
      [scan.id],
    );
    const projectResults = await runner.runProjectRules(
      plannedOf(scan),
      // As the runner's shards left them (JSON): the runner reads its own type back.
      rows.map((row) => row.pending) as never[],
    );
    const done = await complete(scan, runId, projectResults);
    log.info(
      { scan_id: scan.id, run_id: runId, shards: scan.shards_total, completed: done },
      'scan finished',
    );
  }

  const newRunId = () => `${hostname()}:${process.pid}:${randomUUID()}`;

  async function statusOf(scanId: string): Promise<string | undefined> {
    const { rows } = await db.query<{ status: string }>('SELECT status FROM scans WHERE id = $1', [scanId]);
    return rows[0]?.status;
  }

  /** Takes the scan (to plan or merge it); undefined when there is nothing to do. */
  async function takeScan(scanId: string, runId: string): Promise<ScanRow | undefined> {
    const claimed = await claimScan(scanId, runId);
    if (claimed) return claimed;
    // A live worker holds it: ask again later, in case that worker dies before it finishes.
    if ((await statusOf(scanId)) === 'running')
      throw new RunningElsewhere(`Scan ${scanId} is running elsewhere.`);
    return undefined; // finished already (a redelivery), or gone
  }

  async function shardsDone(scanId: string): Promise<ShardRow[]> {
    const { rows } = await db.query<ShardRow>(
      'SELECT status, worker_id FROM scan_shards WHERE scan_id = $1 ORDER BY shard_index',
      [scanId],
    );
    return rows;
  }

  /** scanner.scan.requested: plan the scan; a one-shard scan is run and merged here, by the same code. */
  async function plan(work: ScanWork, info: DeliveryInfo): Promise<void> {
    const runId = newRunId();
    const claimed = await takeScan(work.scanId, runId);
    if (!claimed) return;
    let scan = claimed;
    const holding: Holding = { scanId: scan.id, runId, scan: true };
    log.info(
      { scan_id: scan.id, team_id: scan.team_id, run_id: runId, delivery: info.deliveryCount },
      'scan started',
    );
    await holdWhile(holding, scan, info, async (progress) => {
      if (scan.shards_total === 0) {
        const at = now();
        const planned = await runner.plan(work, at, (resources) => shardCount(resources, sharding));
        const { shards } = planned;
        const stored = await storePlan(scan, runId, {
          windowEnd: planned.windowEnd,
          now: at,
          shards,
          context: planned.context,
        });
        if (!stored) return; // swept or taken over meanwhile
        scan = stored;
        log.info(
          { scan_id: scan.id, run_id: runId, resources: planned.resources, shards: shards.length },
          'scan planned',
        );
        if (shards.length > 1) return; // queued for any worker; the scan was let go with its plan
        holding.shard = 0;
      } else if (scan.shards_total > 1) {
        await release(holding, 0); // a redelivery of a planned scan: its shards are queued
        return;
      } else {
        // A one-shard scan whose run stopped: its shard is taken over here, or merged when it is stored.
        const [shard] = await shardsDone(scan.id);
        if (shard?.status !== 'done') {
          if (!(await claimShard(scan.id, 0, runId))) {
            await release(holding, 0);
            throw new RunningElsewhere(`Scan ${scan.id} is running elsewhere.`);
          }
          holding.shard = 0;
        }
      }
      if (holding.shard !== undefined) {
        const stored = await runShard(scan, { index: 0, count: 1 }, runId, progress, false);
        if (stored !== 'last') return; // failed, swept or taken over meanwhile
        holding.shard = undefined; // stored: a retry from here is the merge's
      }
      await merge(scan, runId);
    });
  }

  /** scanner.scan_shard.requested: run one shard of a planned scan. */
  async function shard(request: { scanId: string; index: number; count: number }, info: DeliveryInfo) {
    const runId = newRunId();
    const range = await claimShard(request.scanId, request.index, runId);
    if (!range) {
      const { rows } = await db.query<{ status: string; scan_status: string }>(
        `SELECT sh.status, s.status AS scan_status FROM scan_shards sh JOIN scans s ON s.id = sh.scan_id
         WHERE sh.scan_id = $1 AND sh.shard_index = $2`,
        [request.scanId, request.index],
      );
      const row = rows[0];
      if (row?.status === 'running' && row.scan_status === 'running')
        throw new RunningElsewhere(`Shard ${request.index} of scan ${request.scanId} is running elsewhere.`);
      return; // stored already (a redelivery), the scan finished, or gone
    }
    const { rows } = await db.query<ScanRow>('SELECT * FROM scans WHERE id = $1', [request.scanId]);
    const scan = rows[0]!;
    const holding: Holding = { scanId: scan.id, runId, scan: false, shard: request.index };
    await holdWhile(holding, scan, info, async (progress) => {
      await runShard(scan, { index: request.index, count: request.count, ...range }, runId, progress, true);
    });
  }

  /** scanner.scan_merge.requested: every shard is stored; merge them and complete the scan once. */
  async function mergeQueued(scanId: string, info: DeliveryInfo) {
    const runId = newRunId();
    const scan = await takeScan(scanId, runId);
    if (!scan) return;
    const holding: Holding = { scanId, runId, scan: true };
    const shards = await shardsDone(scanId);
    if (scan.shards_total === 0 || shards.some((s) => s.status !== 'done')) {
      await release(holding, 0); // not every shard is stored: the last one to be stored queues the merge
      return;
    }
    await holdWhile(holding, scan, info, () => merge(scan, runId));
  }

  return bus.consume({
    durable: scanWorkersDurable,
    types: scanQueueTypes,
    concurrency: options.concurrency,
    ackWaitMs: options.ackWaitMs,
    maxDeliver: 20,
    handler: async (event, info) => {
      if (event.type === 'scanner.scan_shard.requested') {
        const request = decodeEvent(events.ScanShardRequestedSchema, event);
        await shard({ scanId: request.scanId, index: request.shardIndex, count: request.shardCount }, info);
      } else if (event.type === 'scanner.scan_merge.requested') {
        await mergeQueued(decodeEvent(events.ScanMergeRequestedSchema, event).scanId, info);
      } else if (event.type === 'scanner.scan.requested') {
        const request = decodeEvent(events.ScanRequestedSchema, event);
        await plan(
          {
            scanId: request.scanId,
            teamId: request.teamId,
            projectId: request.projectId,
            connectionIds: request.connectionIds,
          },
          info,
        );
      }
    },
  });
}

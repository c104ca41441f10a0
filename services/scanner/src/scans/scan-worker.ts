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
import type { IdGenerator } from '@costgov/ids';
import type { Logger } from '@costgov/log';
import { isDependencyOutage, reasonOf, retryWait, type RetryPolicy } from './retry';
import type { PlannedScan, ScanRunner, ScanWork, ShardSpec } from './run-rules';
import type { ScanRow } from './scan';
import { scanState, type Holding } from './scan-state';
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
  const state = scanState({ db, outbox, newId, now, takeoverMs: heartbeatMs * missedHeartbeats });

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
    const since = outage ? await state.outageSince(holding, at) : undefined;
    const waitMs =
      since === undefined
        ? undefined
        : retryWait(retry, { since, deliveryCount: attempt.info.deliveryCount, now: at });
    if (waitMs === undefined) {
      log.warn({ ...fields, err: error }, 'scan failed');
      await state.fail(holding, outage ? gaveUp(retry.deadlineMs) : messageOf(error));
      return;
    }
    if (!(await state.release(holding, attempt.scanned, true))) return; // swept or taken over meanwhile
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
      state
        .beat(holding, scanned)
        .catch((error: unknown) => log.warn({ ...fields, err: error }, 'scan heartbeat failed'));
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
    const outcome = await runner.runShard(await plannedWithContext(scan), shard, progress);
    const stored = await state.storeShard(scan, shard, runId, outcome, queueMerge);
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

  /** What every shard and the merge share: the scan as planned, with what the runner's plan read. */
  async function plannedWithContext(scan: ScanRow): Promise<PlannedScan> {
    const plan = await state.planOf(scan.id);
    return plan ? { ...plannedOf(scan), context: plan.context } : plannedOf(scan);
  }

  /** The merge, by the run holding the scan: the project-wide rules, then the scan completed once. */
  async function merge(scan: ScanRow, runId: string): Promise<void> {
    const pending = await state.pendingOf(scan.id);
    const projectResults = await runner.runProjectRules(
      await plannedWithContext(scan),
      // As the runner's shards left them (JSON): the runner reads its own type back.
      pending as never[],
    );
    const done = await state.complete(scan, runId, projectResults);
    log.info(
      { scan_id: scan.id, run_id: runId, shards: scan.shards_total, completed: done },
      'scan finished',
    );
  }

  const newRunId = () => `${hostname()}:${process.pid}:${randomUUID()}`;

  /** Takes the scan (to plan or merge it); undefined when there is nothing to do. */
  async function takeScan(scanId: string, runId: string): Promise<ScanRow | undefined> {
    const claimed = await state.claimScan(scanId, runId);
    if (claimed) return claimed;
    // A live worker holds it: ask again later, in case that worker dies before it finishes.
    if ((await state.statusOf(scanId)) === 'running')
      throw new RunningElsewhere(`Scan ${scanId} is running elsewhere.`);
    return undefined; // finished already (a redelivery), or gone
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
        const planned = await runner.plan(
          work,
          at,
          (resources) => shardCount(resources, sharding),
          sharding.maxShards,
        );
        const { shards } = planned;
        const stored = await state.storePlan(scan, runId, {
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
        await state.release(holding, 0); // a redelivery of a planned scan: its shards are queued
        return;
      } else {
        // A one-shard scan whose run stopped: its shard is taken over here, or merged when it is stored.
        const [shard] = await state.shardsDone(scan.id);
        if (shard?.status !== 'done') {
          if (!(await state.claimShard(scan.id, 0, runId))) {
            await state.release(holding, 0);
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
    const range = await state.claimShard(request.scanId, request.index, runId);
    if (!range) {
      const row = await state.shardStatusOf(request.scanId, request.index);
      if (row?.status === 'running' && row.scan_status === 'running')
        throw new RunningElsewhere(`Shard ${request.index} of scan ${request.scanId} is running elsewhere.`);
      return; // stored already (a redelivery), the scan finished, or gone
    }
    const scan = (await state.scanOf(request.scanId))!;
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
    const shards = await state.shardsDone(scanId);
    if (scan.shards_total === 0 || shards.some((s) => s.status !== 'done')) {
      await state.release(holding, 0); // not every shard is stored: the last one to be stored queues the merge
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

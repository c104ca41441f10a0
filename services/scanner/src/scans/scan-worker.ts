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
import { recordFindings } from '../findings/record';
import { maxErrorChars, publishScanFinished } from './finished';
import { isDependencyOutage, reasonOf, retryWait, type RetryPolicy } from './retry';
import type { RunRules, ScanOutcome, ScanWork } from './run-rules';
import type { ScanRow } from './scan';

export interface ScanWorkerOptions {
  db: Db;
  bus: Bus;
  outbox: Outbox;
  newId: IdGenerator;
  now: () => Date;
  logger: Logger;
  runRules: RunRules;
  /** How often a running scan is reported (heartbeat_at and a `working` ack). */
  heartbeatMs: number;
  /** How long the queue waits for an ack or a heartbeat before another worker gets the scan. */
  ackWaitMs: number;
  /** Scans this process runs at once. */
  concurrency: number;
  /** How a scan whose dependency is unavailable is tried again, and until when. */
  retry: RetryPolicy;
}

/** Every worker process consumes under this one durable name, so the queue splits scans between them. */
export const scanWorkersDurable = 'scanner_scan_workers';

/** A scan whose heartbeat is older than this many heartbeats lost its worker: another may take it over. */
const missedHeartbeats = 3;

/** Raised when a scan is running elsewhere with a live worker: the message comes back later. */
class ScanRunningElsewhere extends Error {}

const messageOf = (error: unknown) => (error instanceof Error ? error.message : String(error));

/** A failed scan's `error` when a dependency stayed away past the retry deadline (users read it). */
const gaveUp = (deadlineMs: number) =>
  `A service the scan reads from stayed unavailable for more than ${deadlineMs / 1000} s ` +
  'after the scan started; its credits are refunded. Start the scan again once the service is back.';

/**
 * The worker side: takes `scanner.scan.requested` from the shared work queue and runs the scan. A
 * conditional UPDATE decides who runs a scan (pending, running with a stale heartbeat, or running and
 * released for a retry), and every later write names the run, so a scan taken over or swept is never
 * completed by its earlier run. A run that meets an unavailable dependency releases the scan, still
 * `running`, and has its message redelivered after a backoff, until the retry deadline; any other
 * failure fails the scan at once (and refunds it).
 */
export async function startScanWorker(options: ScanWorkerOptions): Promise<Consumer> {
  const { db, bus, outbox, newId, now, logger, runRules, heartbeatMs, retry } = options;
  const log = logger.child({ component: 'scan-worker' });
  const takeoverMs = heartbeatMs * missedHeartbeats;

  async function claim(scanId: string, runId: string): Promise<ScanRow | undefined> {
    const at = now();
    const { rows } = await db.query<ScanRow>(
      `UPDATE scans SET status = 'running', worker_id = $2, heartbeat_at = $3,
         started_at = coalesce(started_at, $3), updated_at = $3
       WHERE id = $1 AND (status = 'pending'
                          OR (status = 'running' AND (worker_id IS NULL OR heartbeat_at < $4)))
       RETURNING *`,
      [scanId, runId, at, new Date(at.getTime() - takeoverMs)],
    );
    return rows[0];
  }

  async function complete(work: ScanWork, runId: string, outcome: ScanOutcome): Promise<boolean> {
    return db.transaction(async (tx) => {
      const at = now();
      const { rows } = await tx.query<ScanRow>(
        `UPDATE scans SET status = 'completed', resources_scanned = $3, completed_at = $4, heartbeat_at = $4,
           updated_at = $4
         WHERE id = $1 AND worker_id = $2 AND status = 'running' RETURNING *`,
        [work.scanId, runId, outcome.resourcesScanned, at],
      );
      if (!rows[0]) return false; // swept or taken over meanwhile: that outcome stands
      const { findingsCount } = await recordFindings(
        tx,
        { outbox, newId, now },
        {
          teamId: work.teamId,
          projectId: work.projectId,
          scanId: work.scanId,
          results: outcome.results,
          resourceIds: outcome.resourceIds,
        },
      );
      await tx.query('UPDATE scans SET findings_count = $2 WHERE id = $1', [work.scanId, findingsCount]);
      await publishScanFinished(outbox, tx, { ...rows[0], findings_count: findingsCount });
      return true;
    });
  }

  /**
   * Hands a running scan back to the queue for a retry: no run holds it (any worker may claim it at
   * once), and its heartbeat is now, so the sweeper leaves it alone while the retry waits (the wait is
   * far shorter than SCAN_STALE_MS). False when it was swept or taken over meanwhile.
   */
  async function release(work: ScanWork, runId: string, scanned: number): Promise<boolean> {
    const at = now();
    const { rows } = await db.query(
      `UPDATE scans SET worker_id = NULL, heartbeat_at = $3, resources_scanned = $4, updated_at = $3
       WHERE id = $1 AND worker_id = $2 AND status = 'running' RETURNING id`,
      [work.scanId, runId, at, scanned],
    );
    return rows.length > 0;
  }

  async function fail(work: ScanWork, runId: string, error: string): Promise<boolean> {
    const message = truncateChars(error, maxErrorChars);
    return db.transaction(async (tx) => {
      const at = now();
      const { rows } = await tx.query<ScanRow>(
        `UPDATE scans SET status = 'failed', error = $3, credits_used = 0, completed_at = $4, updated_at = $4
         WHERE id = $1 AND worker_id = $2 AND status = 'running' RETURNING *`,
        [work.scanId, runId, message || 'The scan failed.', at],
      );
      // The refund follows from scanner.scan.failed (see refund-failed.ts), so it survives a crash here.
      if (rows[0]) await publishScanFinished(outbox, tx, rows[0]);
      return rows.length > 0;
    });
  }

  /**
   * After a run failed: an outage within the retry deadline releases the scan and throws RedeliverLater
   * (the bus brings the message back after the wait); anything else fails the scan.
   */
  async function retryOrFail(
    error: unknown,
    attempt: {
      work: ScanWork;
      runId: string;
      startedAt: Date;
      info: DeliveryInfo;
      scanned: number;
      fields: Record<string, unknown>;
    },
  ): Promise<void> {
    const { work, runId, fields } = attempt;
    const outage = isDependencyOutage(error);
    const waitMs = outage
      ? retryWait(retry, {
          startedAt: attempt.startedAt,
          deliveryCount: attempt.info.deliveryCount,
          now: now(),
        })
      : undefined;
    if (waitMs === undefined) {
      log.warn({ ...fields, err: error }, 'scan failed');
      await fail(work, runId, outage ? gaveUp(retry.deadlineMs) : messageOf(error));
      return;
    }
    if (!(await release(work, runId, attempt.scanned))) return; // swept or taken over meanwhile
    const reason = reasonOf(error);
    log.warn({ ...fields, reason, retry_in_ms: waitMs }, 'scan waits for an unavailable dependency');
    throw new RedeliverLater(waitMs, `Scan ${work.scanId} waits for a dependency: ${reason}`, {
      cause: error,
    });
  }

  async function run(work: ScanWork, info: DeliveryInfo): Promise<void> {
    // Names the process too, so an operator (or a test) sees which worker holds a running scan.
    const runId = `${hostname()}:${process.pid}:${randomUUID()}`;
    const claimed = await claim(work.scanId, runId);
    if (!claimed) {
      const { rows } = await db.query<{ status: string }>('SELECT status FROM scans WHERE id = $1', [
        work.scanId,
      ]);
      // A live worker holds it: ask again later, in case that worker dies before it finishes.
      if (rows[0]?.status === 'running')
        throw new ScanRunningElsewhere(`Scan ${work.scanId} is running elsewhere.`);
      return; // finished already (a redelivery), or gone
    }
    const fields = {
      scan_id: work.scanId,
      team_id: work.teamId,
      run_id: runId,
      delivery: info.deliveryCount,
    };
    log.info(fields, 'scan started');
    let scanned = 0;
    const heartbeat = setInterval(() => {
      info.working();
      const at = now();
      db.query(
        `UPDATE scans SET heartbeat_at = $3, resources_scanned = $4, updated_at = $3
         WHERE id = $1 AND worker_id = $2 AND status = 'running'`,
        [work.scanId, runId, at, scanned],
      ).catch((error: unknown) => log.warn({ ...fields, err: error }, 'scan heartbeat failed'));
    }, heartbeatMs);
    try {
      let outcome: ScanOutcome;
      let done: boolean;
      try {
        outcome = await runRules(work, (resources) => (scanned = resources));
        done = await complete(work, runId, outcome);
      } catch (error) {
        await retryOrFail(error, { work, runId, startedAt: claimed.started_at!, info, scanned, fields });
        return;
      }
      log.info({ ...fields, resources_scanned: outcome.resourcesScanned, completed: done }, 'scan finished');
    } finally {
      clearInterval(heartbeat);
    }
  }

  return bus.consume({
    durable: scanWorkersDurable,
    types: ['scanner.scan.requested'],
    concurrency: options.concurrency,
    ackWaitMs: options.ackWaitMs,
    maxDeliver: 20,
    handler: async (event, info) => {
      const request = decodeEvent(events.ScanRequestedSchema, event);
      await run(
        {
          scanId: request.scanId,
          teamId: request.teamId,
          projectId: request.projectId,
          connectionIds: request.connectionIds,
        },
        info,
      );
    },
  });
}

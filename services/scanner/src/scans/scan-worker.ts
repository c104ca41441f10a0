import { randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import { decodeEvent, type Bus, type Consumer, type DeliveryInfo } from '@costgov/bus';
import { events } from '@costgov/contracts';
import type { Db } from '@costgov/db';
import { truncateChars } from '@costgov/errors';
import type { IdGenerator } from '@costgov/ids';
import type { Logger } from '@costgov/log';
import type { Outbox } from '@costgov/runtime';
import { recordFindings } from '../findings/record';
import { maxErrorChars, publishScanFinished } from './finished';
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
}

/** Every worker process consumes under this one durable name, so the queue splits scans between them. */
export const scanWorkersDurable = 'scanner_scan_workers';

/** A scan whose heartbeat is older than this many heartbeats lost its worker: another may take it over. */
const missedHeartbeats = 3;

/** Raised when a scan is running elsewhere with a live worker: the message comes back later. */
class ScanRunningElsewhere extends Error {}

/**
 * The worker side: takes `scanner.scan.requested` from the shared work queue and runs the scan. A
 * conditional UPDATE decides who runs a scan (pending, or running with a stale heartbeat), and every
 * later write names the run, so a scan taken over or swept is never completed by its earlier run.
 */
export async function startScanWorker(options: ScanWorkerOptions): Promise<Consumer> {
  const { db, bus, outbox, newId, now, logger, runRules, heartbeatMs } = options;
  const log = logger.child({ component: 'scan-worker' });
  const takeoverMs = heartbeatMs * missedHeartbeats;

  async function claim(scanId: string, runId: string): Promise<ScanRow | undefined> {
    const at = now();
    const { rows } = await db.query<ScanRow>(
      `UPDATE scans SET status = 'running', worker_id = $2, heartbeat_at = $3,
         started_at = coalesce(started_at, $3), updated_at = $3
       WHERE id = $1 AND (status = 'pending' OR (status = 'running' AND heartbeat_at < $4))
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
        { teamId: work.teamId, projectId: work.projectId, scanId: work.scanId, results: outcome.results },
      );
      await tx.query('UPDATE scans SET findings_count = $2 WHERE id = $1', [work.scanId, findingsCount]);
      await publishScanFinished(outbox, tx, { ...rows[0], findings_count: findingsCount });
      return true;
    });
  }

  async function fail(work: ScanWork, runId: string, error: unknown): Promise<boolean> {
    const message = truncateChars(error instanceof Error ? error.message : String(error), maxErrorChars);
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
      try {
        outcome = await runRules(work, (resources) => (scanned = resources));
      } catch (error) {
        log.warn({ ...fields, err: error }, 'scan failed');
        await fail(work, runId, error);
        return;
      }
      const done = await complete(work, runId, outcome);
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

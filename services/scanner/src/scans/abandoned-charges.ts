import type { Db } from '@costgov/db';
import { NotFoundError } from '@costgov/errors';
import type { Logger } from '@costgov/log';
import { forgetReservation } from '@costgov/runtime';
import type { ScanCredits } from './scan-credits';
import { createScanOperation } from './scans';

/** SCAN_CHARGE_GRACE_MS's default: far above any attempt (a few calls, each within RPC_DEADLINE_MS). */
export const defaultChargeGraceMs = 600_000;

/**
 * Gives back the charges of scans that were never stored: createScan writes a charge down before asking
 * identity and deletes it with the transaction that stores the scan, so a charge older than `graceMs` is
 * one whose attempt died between the two (the scanner's API process killed, Postgres lost) and was not
 * finished by a retry with its Idempotency-Key. A charge is first marked taken, with the key's reservation
 * forgotten, so that no attempt stores its scan from then on; the refund follows outside any transaction
 * (identity may be slow or down), then the row goes. An attempt that stalled past the grace finds its
 * charge taken, refunds itself (a debit that landed after the sweeper's refund) and answers 503. Every API
 * process may sweep: identity's ledger refunds a scan once.
 */
export function abandonedChargeSweeper({
  db,
  credits,
  now,
  logger,
  graceMs,
}: {
  db: Db;
  credits: ScanCredits;
  now: () => Date;
  logger: Logger;
  graceMs: number;
}) {
  let timer: NodeJS.Timeout | undefined;
  let sweeping: Promise<unknown> = Promise.resolve();

  /** Gives back one charge; false when it is gone meanwhile (its scan was stored after all). */
  async function giveBack(scanId: string, teamId: string): Promise<boolean> {
    const taken = await db.transaction(async (tx) => {
      // Waits for an attempt storing the scan right now: its commit deletes the row, and nothing is taken.
      const { rows } = await tx.query(
        'UPDATE scan_charges SET given_back_at = coalesce(given_back_at, $2) WHERE scan_id = $1 RETURNING 1',
        [scanId, now()],
      );
      if (rows.length === 0) return false;
      // A retry with the key now starts afresh instead of finishing an attempt that was given back.
      await forgetReservation(tx, teamId, createScanOperation, scanId);
      return true;
    });
    if (!taken) return false;
    // NotFound: identity never charged it (the attempt died before its debit arrived).
    await credits.refund(teamId, scanId).catch((error: unknown) => {
      if (!(error instanceof NotFoundError)) throw error;
    });
    await db.query('DELETE FROM scan_charges WHERE scan_id = $1', [scanId]);
    return true;
  }

  /** Gives back every charge past its grace (a taken one again, if its refund did not finish). */
  async function sweep(): Promise<number> {
    const { rows } = await db.query<{ scan_id: string; team_id: string }>(
      'SELECT scan_id, team_id FROM scan_charges WHERE created_at < $1 ORDER BY created_at LIMIT 100',
      [new Date(now().getTime() - graceMs)],
    );
    const given: string[] = [];
    for (const row of rows) if (await giveBack(row.scan_id, row.team_id)) given.push(row.scan_id);
    if (given.length > 0) logger.warn({ scan_ids: given }, 'charges of scans never stored given back');
    return given.length;
  }

  return {
    sweep,
    start(intervalMs: number) {
      timer = setInterval(() => {
        sweeping = sweep().catch((error: unknown) =>
          logger.warn({ err: error }, 'abandoned scan charges not given back; trying again later'),
        );
      }, intervalMs);
      timer.unref();
    },
    async stop() {
      clearInterval(timer);
      await sweeping;
    },
  };
}

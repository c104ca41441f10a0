import type { Db } from '@costgov/db';
import { NotFoundError } from '@costgov/errors';
import type { Logger } from '@costgov/log';
import { forgetReservation } from '@costgov/runtime';
import type { ScanCredits } from './scan-credits';
import { createScanOperation } from './scans';

/**
 * Gives back the charges of scans that were never stored: createScan writes a charge down before asking
 * identity and deletes it with the transaction that stores the scan, so a charge older than `graceMs` is
 * one whose attempt died between the two (the scanner's API process killed, Postgres lost) and was not
 * finished by a retry with its Idempotency-Key. The grace is far longer than any attempt takes (an RPC
 * deadline), so a charge is never given back under an attempt still running; one that stalled past it
 * finds its charge gone and answers 503. Every API process may sweep: a charge is locked while it is given
 * back, and identity's ledger refunds a scan once.
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

  /** Gives back one charge if it is still there and not being stored; true when it was. */
  async function giveBack(scanId: string, teamId: string): Promise<boolean> {
    return db.transaction(async (tx) => {
      const { rows } = await tx.query(
        'SELECT 1 FROM scan_charges WHERE scan_id = $1 FOR UPDATE SKIP LOCKED',
        [scanId],
      );
      if (!rows[0]) return false;
      // NotFound: identity never charged it (the attempt died before its debit arrived).
      await credits.refund(teamId, scanId).catch((error: unknown) => {
        if (!(error instanceof NotFoundError)) throw error;
      });
      await tx.query('DELETE FROM scan_charges WHERE scan_id = $1', [scanId]);
      // A retry with the key now starts afresh instead of finishing an attempt that was given back.
      await forgetReservation(tx, teamId, createScanOperation, scanId);
      return true;
    });
  }

  async function sweep(): Promise<number> {
    const { rows } = await db.query<{ scan_id: string; team_id: string }>(
      'SELECT scan_id, team_id FROM scan_charges WHERE created_at < $1 ORDER BY created_at LIMIT 100',
      [new Date(now().getTime() - graceMs)],
    );
    let given = 0;
    for (const row of rows) if (await giveBack(row.scan_id, row.team_id)) given++;
    if (given > 0)
      logger.warn({ scan_ids: rows.map((r) => r.scan_id) }, 'charges of scans never stored given back');
    return given;
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

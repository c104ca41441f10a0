import type { Db } from '@costgov/db';
import { ConflictError, NotFoundError, Violations } from '@costgov/errors';

export interface ScanCreditsResult {
  /** The team's balance after the call. */
  balance: number;
  /** False when the debit (or refund) of this scan had already been made: nothing changed. */
  applied: boolean;
}

/**
 * Scan credits taken per scan and given back when a scan fails, through a ledger keyed by scan id: the
 * scanner may retry either call (a timeout, a redelivered message) and the team is charged once.
 */
export function scanCreditsFactory({ db }: { db: Db }) {
  async function debit(teamId: string, scanId: string, credits: number): Promise<ScanCreditsResult> {
    new Violations()
      .check(scanId.length > 0 && scanId.length <= 100, 'scan_id', 'must be 1 to 100 characters')
      .check(
        Number.isInteger(credits) && credits > 0 && credits <= 1_000_000,
        'credits',
        'must be a whole number from 1 to 1000000',
      )
      .throwIfAny();
    return db.transaction(async (tx) => {
      const team = await tx.query<{ scan_credits: number }>(
        'SELECT scan_credits FROM teams WHERE id = $1 FOR UPDATE',
        [teamId],
      );
      if (!team.rows[0]) throw new NotFoundError('Team', teamId);
      const done = await tx.query<{ team_id: string }>(
        'SELECT team_id FROM scan_credit_debits WHERE scan_id = $1',
        [scanId],
      );
      if (done.rows[0]) {
        if (done.rows[0].team_id !== teamId) throw new NotFoundError('Scan', scanId);
        return { balance: team.rows[0].scan_credits, applied: false };
      }
      const balance = team.rows[0].scan_credits;
      if (balance < credits) {
        throw new ConflictError(
          `The scan needs ${credits} scan credit${credits === 1 ? '' : 's'}; the team has ${balance}.`,
          [{ field: 'scan_credits', message: `${balance} left, ${credits} needed` }],
        );
      }
      await tx.query('INSERT INTO scan_credit_debits (scan_id, team_id, credits) VALUES ($1, $2, $3)', [
        scanId,
        teamId,
        credits,
      ]);
      const { rows } = await tx.query<{ scan_credits: number }>(
        'UPDATE teams SET scan_credits = scan_credits - $2 WHERE id = $1 RETURNING scan_credits',
        [teamId, credits],
      );
      return { balance: rows[0]!.scan_credits, applied: true };
    });
  }

  async function refund(teamId: string, scanId: string): Promise<ScanCreditsResult> {
    return db.transaction(async (tx) => {
      const { rows } = await tx.query<{ credits: number; refunded: boolean }>(
        `SELECT credits, refunded_at IS NOT NULL AS refunded FROM scan_credit_debits
         WHERE scan_id = $1 AND team_id = $2 FOR UPDATE`,
        [scanId, teamId],
      );
      const debit = rows[0];
      if (!debit) throw new NotFoundError('Scan debit', scanId);
      if (debit.refunded) {
        const team = await tx.query<{ scan_credits: number }>(
          'SELECT scan_credits FROM teams WHERE id = $1',
          [teamId],
        );
        return { balance: team.rows[0]!.scan_credits, applied: false };
      }
      await tx.query('UPDATE scan_credit_debits SET refunded_at = now() WHERE scan_id = $1', [scanId]);
      const team = await tx.query<{ scan_credits: number }>(
        'UPDATE teams SET scan_credits = scan_credits + $2 WHERE id = $1 RETURNING scan_credits',
        [teamId, debit.credits],
      );
      return { balance: team.rows[0]!.scan_credits, applied: true };
    });
  }

  return { debit, refund };
}

export type ScanCredits = ReturnType<typeof scanCreditsFactory>;

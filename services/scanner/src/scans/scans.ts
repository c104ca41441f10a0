import type { Outbox } from '@costgov/bus';
import { enumFilter, limitOffset, pageMeta, pageOf, textFilter, type Db, type PageMeta } from '@costgov/db';
import {
  BadRequestError,
  ConflictError,
  NotFoundError,
  UnavailableError,
  ValidationError,
} from '@costgov/errors';
import { looksLikeId, type IdGenerator } from '@costgov/ids';
import type { Logger } from '@costgov/log';
import type { KeyedEffect } from '@costgov/runtime';
import type { ProjectLookup } from './project-lookup';
import { requestScan } from './requests';
import {
  scanStatuses,
  scanWithProgress,
  toScan,
  type Scan,
  type ScanProgressRow,
  type ScanRow,
} from './scan';
import type { ScanCredits } from './scan-credits';

export interface ListScansInput {
  projectId?: string;
  status?: string;
  page?: number;
  perPage?: number;
}

/** The operation under which createScan records an Idempotency-Key (and the charge sweeper forgets it). */
export const createScanOperation = 'CreateScan';

/** The scan's charge is no longer there to be stored with it (see createScan). */
class ChargeGone extends Error {}

/** A debit identity decided against: nothing was charged. */
const refused = (error: unknown) =>
  error instanceof ConflictError ||
  error instanceof NotFoundError ||
  error instanceof ValidationError ||
  error instanceof BadRequestError;

/**
 * The API side of scans: a scan is paid for in identity, then stored `pending` and queued in one
 * transaction. Its charge is written down first (scan_charges), so that a charge whose scan was never
 * stored (this process died between the two) is given back by the charge sweeper; with an
 * Idempotency-Key the scan's id is kept with the key, so that a retry finishes that attempt under the same
 * id, which identity's ledger charges once.
 */
export function scansFactory({
  db,
  outbox,
  newId,
  now,
  projects,
  credits,
  logger,
}: {
  db: Db;
  outbox: Outbox;
  newId: IdGenerator;
  now: () => Date;
  projects: ProjectLookup;
  credits: ScanCredits;
  logger: Logger;
}) {
  async function createScan(teamId: string, projectId: string, effect?: KeyedEffect<Scan>): Promise<Scan> {
    if (!looksLikeId('project', projectId)) throw new NotFoundError('Project', projectId);
    const project = await projects.project(teamId, projectId);
    if (project.status === 'archived') {
      throw new ConflictError(`Project '${projectId}' is archived: an archived project is not scanned.`, [
        { field: 'project_id', message: 'is archived' },
      ]);
    }
    // One credit per connection the scan reads, and one for a project without connections.
    const cost = Math.max(1, project.connectionIds.length);
    const id = effect?.reserved ?? newId('scan');
    if (!effect?.reserved) {
      await db.transaction(async (tx) => {
        await tx.query(
          'INSERT INTO scan_charges (scan_id, team_id, credits, created_at) VALUES ($1, $2, $3, $4)',
          [id, teamId, cost, now()],
        );
        await effect?.reserve(tx, id);
      });
    }
    try {
      await credits.debit(teamId, id, cost);
    } catch (error) {
      // Refused (too few credits, no such team, a bad request): nothing was charged, so nothing is left to
      // give back. Anything else (unavailable, an answer lost on the way) may have charged: a retry with
      // the key, or the sweeper, settles it.
      if (refused(error)) await forgetCharge(teamId, id, effect);
      throw error;
    }
    try {
      return await db.transaction(async (tx) => {
        const charge = await tx.query(
          'DELETE FROM scan_charges WHERE scan_id = $1 AND given_back_at IS NULL RETURNING scan_id',
          [id],
        );
        // Gone: a concurrent attempt with the key stored the scan (its answer is replayed), or the sweeper
        // gives the charge back after this attempt stalled past its grace.
        if (charge.rows.length === 0) throw new ChargeGone();
        const { rows } = await tx.query<ScanRow>(
          `INSERT INTO scans (id, team_id, project_id, connection_ids, credits_used, created_at, updated_at)
           VALUES ($1, $2, $3, $4, $5, $6, $6) RETURNING *`,
          [id, teamId, projectId, project.connectionIds, cost, now()],
        );
        await requestScan(outbox, tx, {
          scanId: id,
          teamId,
          projectId,
          connectionIds: project.connectionIds,
          credits: cost,
        });
        const scan = toScan({ ...rows[0]!, shards_done: 0, shards_scanned: 0 });
        await effect?.record(tx, scan);
        return scan;
      });
    } catch (error) {
      // Paid for, maybe not stored. With a key and the charge still there, a retry finishes this scan
      // under its id (or the sweeper gives the charge back after its grace). Otherwise nobody will: give
      // the credits back now, unless the scan was stored after all (a commit whose answer was lost).
      const gone = error instanceof ChargeGone;
      if (!effect || gone) await giveBackUnstored(teamId, id);
      throw gone ? new UnavailableError('The scan request was given up; retry it.') : error;
    }
  }

  /**
   * Refunds a scan that is not stored and drops its charge: identity refunds a scan once, so this is also
   * safe after the sweeper, and it undoes a debit that landed after the sweeper's refund. A failure is
   * left to the sweeper (the charge row is still there) and logged.
   */
  async function giveBackUnstored(teamId: string, id: string) {
    try {
      const stored = await db.query('SELECT 1 FROM scans WHERE id = $1', [id]);
      if (stored.rows.length > 0) return;
      await credits.refund(teamId, id).catch((error: unknown) => {
        if (!(error instanceof NotFoundError)) throw error; // never charged
      });
      await db.query('DELETE FROM scan_charges WHERE scan_id = $1', [id]);
    } catch (error) {
      logger.warn(
        { err: error, scan_id: id, team_id: teamId },
        'refund of an unstored scan failed; the charge sweeper gives it back later',
      );
    }
  }

  /** Drops a charge that was never made or was given back, and the key's reservation of it. */
  async function forgetCharge(teamId: string, id: string, effect: KeyedEffect<Scan> | undefined) {
    await db
      .transaction(async (tx) => {
        await tx.query('DELETE FROM scan_charges WHERE scan_id = $1', [id]);
        await effect?.forget(tx);
      })
      .catch((error: unknown) => {
        logger.warn(
          { err: error, scan_id: id, team_id: teamId },
          'scan charge not cleared; the sweeper will',
        );
      });
  }

  async function getScan(teamId: string, id: string): Promise<Scan> {
    if (!looksLikeId('scan', id)) throw new NotFoundError('Scan', id);
    const { rows } = await db.query<ScanProgressRow>(
      `SELECT ${scanWithProgress} WHERE s.team_id = $1 AND s.id = $2`,
      [teamId, id],
    );
    if (!rows[0]) throw new NotFoundError('Scan', id);
    return toScan(rows[0]);
  }

  async function listScans(
    teamId: string,
    input: ListScansInput,
  ): Promise<{ scans: Scan[]; meta: PageMeta }> {
    const page = pageOf(input);
    const status = enumFilter('status', input.status, scanStatuses);
    const projectId = textFilter('project_id', input.projectId);
    const where = ['s.team_id = $1'];
    const params: unknown[] = [teamId];
    if (projectId !== undefined) where.push(`s.project_id = $${params.push(projectId)}`);
    if (status !== undefined) where.push(`s.status = $${params.push(status)}`);
    const filter = where.join(' AND ');
    const { limit, offset } = limitOffset(page);
    const [count, list] = await Promise.all([
      db.query<{ n: number }>(`SELECT count(*)::int AS n FROM scans s WHERE ${filter}`, params),
      db.query<ScanProgressRow>(
        `SELECT ${scanWithProgress} WHERE ${filter}
         ORDER BY s.created_at DESC, s.id DESC LIMIT ${limit} OFFSET ${offset}`,
        params,
      ),
    ]);
    return { scans: list.rows.map(toScan), meta: pageMeta(page, count.rows[0]!.n) };
  }

  return { createScan, getScan, listScans };
}

export type Scans = ReturnType<typeof scansFactory>;

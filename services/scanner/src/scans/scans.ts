import { create } from '@bufbuild/protobuf';
import { events } from '@costgov/contracts';
import { limitOffset, pageMeta, pageOf, type Db, type PageMeta } from '@costgov/db';
import { BadRequestError, ConflictError, NotFoundError, textProblem } from '@costgov/errors';
import { looksLikeId, type IdGenerator } from '@costgov/ids';
import type { Logger } from '@costgov/log';
import type { Outbox } from '@costgov/runtime';
import type { ProjectLookup } from './project-lookup';
import { scanStatuses, toScan, type Scan, type ScanRow } from './scan';
import type { ScanCredits } from './scan-credits';

export interface ListScansInput {
  projectId?: string;
  status?: string;
  page?: number;
  perPage?: number;
}

/** The API side of scans: a scan is paid for in identity, stored `pending` and queued in one transaction. */
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
  async function createScan(teamId: string, projectId: string): Promise<Scan> {
    if (!looksLikeId('project', projectId)) throw new NotFoundError('Project', projectId);
    const project = await projects.project(teamId, projectId);
    if (project.status === 'archived') {
      throw new ConflictError(`Project '${projectId}' is archived: an archived project is not scanned.`, [
        { field: 'project_id', message: 'is archived' },
      ]);
    }
    const id = newId('scan');
    // One credit per connection the scan reads, and one for a project without connections.
    const cost = Math.max(1, project.connectionIds.length);
    await credits.debit(teamId, id, cost);
    try {
      return await db.transaction(async (tx) => {
        const { rows } = await tx.query<ScanRow>(
          `INSERT INTO scans (id, team_id, project_id, connection_ids, credits_used, created_at, updated_at)
           VALUES ($1, $2, $3, $4, $5, $6, $6) RETURNING *`,
          [id, teamId, projectId, project.connectionIds, cost, now()],
        );
        await outbox.addMessage(tx, {
          type: 'scanner.scan.requested',
          subject: id,
          schema: events.ScanRequestedSchema,
          message: create(events.ScanRequestedSchema, {
            scanId: id,
            teamId,
            projectId,
            connectionIds: project.connectionIds,
            credits: cost,
          }),
        });
        return toScan(rows[0]!);
      });
    } catch (error) {
      // Paid for but never stored: give the credits back (the ledger refunds a scan once).
      await credits.refund(teamId, id).catch((refundError: unknown) => {
        logger.error({ err: refundError, scan_id: id, team_id: teamId }, 'refund of an unstored scan failed');
      });
      throw error;
    }
  }

  async function getScan(teamId: string, id: string): Promise<Scan> {
    if (!looksLikeId('scan', id)) throw new NotFoundError('Scan', id);
    const { rows } = await db.query<ScanRow>('SELECT * FROM scans WHERE team_id = $1 AND id = $2', [
      teamId,
      id,
    ]);
    if (!rows[0]) throw new NotFoundError('Scan', id);
    return toScan(rows[0]);
  }

  async function listScans(
    teamId: string,
    input: ListScansInput,
  ): Promise<{ scans: Scan[]; meta: PageMeta }> {
    const page = pageOf(input);
    if (input.status !== undefined && !(scanStatuses as readonly string[]).includes(input.status)) {
      throw new BadRequestError(`Unknown status '${input.status}'.`, [
        { field: 'status', message: `must be one of ${scanStatuses.join(', ')}` },
      ]);
    }
    const projectProblem = input.projectId === undefined ? undefined : textProblem(input.projectId);
    if (projectProblem) {
      throw new BadRequestError('The project_id filter is not acceptable text.', [
        { field: 'project_id', message: projectProblem },
      ]);
    }
    const where = ['team_id = $1'];
    const params: unknown[] = [teamId];
    if (input.projectId !== undefined) where.push(`project_id = $${params.push(input.projectId)}`);
    if (input.status !== undefined) where.push(`status = $${params.push(input.status)}`);
    const filter = where.join(' AND ');
    const { limit, offset } = limitOffset(page);
    const [count, list] = await Promise.all([
      db.query<{ n: number }>(`SELECT count(*)::int AS n FROM scans WHERE ${filter}`, params),
      db.query<ScanRow>(
        `SELECT * FROM scans WHERE ${filter} ORDER BY created_at DESC, id DESC LIMIT ${limit} OFFSET ${offset}`,
        params,
      ),
    ]);
    return { scans: list.rows.map(toScan), meta: pageMeta(page, count.rows[0]!.n) };
  }

  return { createScan, getScan, listScans };
}

export type Scans = ReturnType<typeof scansFactory>;

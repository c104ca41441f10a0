import {
  enumFilter,
  limitOffset,
  pageMeta,
  pageOf,
  textFilter,
  type Db,
  type PageMeta,
  type Queryable,
} from '@costgov/db';
import type { Outbox } from '@costgov/bus';
import { BadRequestError, ConflictError, NotFoundError } from '@costgov/errors';
import { looksLikeId } from '@costgov/ids';
import { publishFindingChange } from './changes';
import {
  findingColumns,
  findingOrder,
  severities,
  statuses,
  toFinding,
  type Finding,
  type FindingRow,
  type Status,
} from './finding';
import { checkUpdate } from './validation';

export interface ListFindingsInput {
  scanId?: string;
  projectId?: string;
  severity?: string;
  status?: string;
  ruleId?: string;
  page?: number;
  perPage?: number;
}

export interface UpdateFindingInput {
  status: string;
  reason?: string;
  /** Who acts: a SCIM user id (OAuth) or an API key id. */
  actor: string;
}

/** What a person may change, and from which status; a resolved finding is the scans' to reopen (409). */
const allowedFrom: Record<'suppressed' | 'open', Status> = { suppressed: 'open', open: 'suppressed' };

/** Findings a scan's read shows at most; the list pages through the rest. */
export const scanFindingsLimit = 100;

/**
 * The findings a scan was the last to report, most severe first (at most `limit`). A later scan of the
 * project that sees a finding again takes it over.
 */
export async function findingsOfScan(
  db: Queryable,
  teamId: string,
  scanId: string,
  limit = scanFindingsLimit,
): Promise<Finding[]> {
  const { rows } = await db.query<FindingRow>(
    `SELECT ${findingColumns} FROM findings f WHERE f.team_id = $1 AND f.scan_id = $2
     ORDER BY ${findingOrder} LIMIT ${Math.trunc(limit)}`,
    [teamId, scanId],
  );
  return rows.map(toFinding);
}

export function findingsFactory({ db, outbox, now }: { db: Db; outbox: Outbox; now: () => Date }) {
  async function listFindings(
    teamId: string,
    input: ListFindingsInput,
  ): Promise<{ findings: Finding[]; meta: PageMeta }> {
    const page = pageOf(input);
    const filters = {
      scan_id: textFilter('scan_id', input.scanId),
      project_id: textFilter('project_id', input.projectId),
      rule_id: textFilter('rule_id', input.ruleId),
      severity: enumFilter('severity', input.severity, severities),
      status: enumFilter('status', input.status, statuses),
    };
    const where = ['f.team_id = $1'];
    const params: unknown[] = [teamId];
    for (const [column, value] of Object.entries(filters)) {
      if (value !== undefined) where.push(`f.${column} = $${params.push(value)}`);
    }
    const filter = where.join(' AND ');
    const { limit, offset } = limitOffset(page);
    const [count, list] = await Promise.all([
      db.query<{ n: number }>(`SELECT count(*)::int AS n FROM findings f WHERE ${filter}`, params),
      db.query<FindingRow>(
        `SELECT ${findingColumns} FROM findings f WHERE ${filter}
         ORDER BY ${findingOrder} LIMIT ${limit} OFFSET ${offset}`,
        params,
      ),
    ]);
    return { findings: list.rows.map(toFinding), meta: pageMeta(page, count.rows[0]!.n) };
  }

  /** open → suppressed (with the reason and the actor kept), suppressed → open; anything else is 409. */
  async function updateFinding(teamId: string, id: string, input: UpdateFindingInput): Promise<Finding> {
    if (!looksLikeId('finding', id)) throw new NotFoundError('Finding', id);
    const { status, reason } = checkUpdate(input);
    if (input.actor === '') throw new BadRequestError('The call names no actor (the credential that acts).');
    return db.transaction(async (tx) => {
      const { rows: found } = await tx.query<{ status: Status }>(
        'SELECT status FROM findings WHERE team_id = $1 AND id = $2 FOR UPDATE',
        [teamId, id],
      );
      if (!found[0]) throw new NotFoundError('Finding', id);
      const current = found[0].status;
      if (current !== allowedFrom[status]) {
        throw new ConflictError(
          `Finding '${id}' is ${current}; only ${allowedFrom[status]} findings can be set to ${status}.`,
          [{ field: 'status', message: `is ${current}, must be ${allowedFrom[status]}` }],
        );
      }
      const { rows } = await tx.query<FindingRow>(
        `UPDATE findings f SET status = $3, suppression_reason = $4, suppressed_by = $5, updated_at = $6
         WHERE f.team_id = $1 AND f.id = $2 RETURNING ${findingColumns}`,
        [teamId, id, status, reason, status === 'suppressed' ? input.actor : null, now()],
      );
      const updated = toFinding(rows[0]!);
      await publishFindingChange(outbox, tx, 'updated', updated);
      return updated;
    });
  }

  return {
    listFindings,
    updateFinding,
    findingsOfScan: (teamId: string, scanId: string) => findingsOfScan(db, teamId, scanId),
  };
}

export type Findings = ReturnType<typeof findingsFactory>;

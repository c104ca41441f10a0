import {
  enumFilter,
  limitOffset,
  pageMeta,
  pageOf,
  sortOf,
  textFilter,
  type Db,
  type PageMeta,
  type Queryable,
} from '@costgov/db';
import type { Outbox } from '@costgov/bus';
import { BadRequestError, ConflictError, NotFoundError } from '@costgov/errors';
import { looksLikeId } from '@costgov/ids';
import type { KeyedEffect } from '@costgov/runtime';
import { publishViolationChange } from './changes';
import { checkNote, sortColumns, sortFields } from './validation';
import {
  severities,
  statuses,
  toViolation,
  violationColumns,
  type Status,
  type Violation,
  type ViolationRow,
} from './violation';

export interface ListViolationsInput {
  projectId?: string;
  budgetId?: string;
  severity?: string;
  status?: string;
  sort?: { field: string; descending: boolean };
  page?: number;
  perPage?: number;
}

export interface TransitionInput {
  note?: string;
  /** Who acts: a SCIM user id (OAuth) or an API key id. */
  actor: string;
}

/** The transitions a person can make, and the states each starts from; anything else is 409. */
const transitions = {
  acknowledged: {
    from: ['open'],
    columns: ['acknowledged_by', 'acknowledged_at', 'acknowledge_note'],
  },
  resolved: {
    from: ['open', 'acknowledged'],
    columns: ['resolved_by', 'resolved_at', 'resolve_note'],
  },
} as const satisfies Record<string, { from: readonly Status[]; columns: readonly string[] }>;

/** An id that cannot be a violation's is not found, without a query. */
function checkViolationId(id: string): void {
  if (!looksLikeId('violation', id)) throw new NotFoundError('Violation', id);
}

function checkActor(actor: string): string {
  if (actor === '') throw new BadRequestError('The call names no actor (the credential that acts).');
  return actor;
}

export function violationsFactory({ db, outbox, now }: { db: Db; outbox: Outbox; now: () => Date }) {
  async function find(tx: Queryable, teamId: string, id: string, lock = false): Promise<Violation> {
    checkViolationId(id);
    const { rows } = await tx.query<ViolationRow>(
      `SELECT ${violationColumns} FROM violations v WHERE v.team_id = $1 AND v.id = $2${lock ? ' FOR UPDATE' : ''}`,
      [teamId, id],
    );
    if (!rows[0]) throw new NotFoundError('Violation', id);
    return toViolation(rows[0]);
  }

  const getViolation = (teamId: string, id: string): Promise<Violation> => find(db, teamId, id);

  async function listViolations(
    teamId: string,
    input: ListViolationsInput,
  ): Promise<{ violations: Violation[]; meta: PageMeta }> {
    const page = pageOf(input);
    // Newest first unless asked otherwise.
    const sort = sortOf(input.sort, sortFields, { field: 'created_at', descending: true });
    const filters = {
      project_id: textFilter('project_id', input.projectId),
      budget_id: textFilter('budget_id', input.budgetId),
      severity: enumFilter('severity', input.severity, severities),
      status: enumFilter('status', input.status, statuses),
    };
    const where = ['v.team_id = $1'];
    const params: unknown[] = [teamId];
    for (const [column, value] of Object.entries(filters)) {
      if (value !== undefined) where.push(`v.${column} = $${params.push(value)}`);
    }
    const filter = where.join(' AND ');
    const direction = sort.descending ? 'DESC' : 'ASC';
    const { limit, offset } = limitOffset(page);
    // Ties are broken by id in the same direction, so pages never overlap or skip.
    const [count, list] = await Promise.all([
      db.query<{ n: number }>(`SELECT count(*)::int AS n FROM violations v WHERE ${filter}`, params),
      db.query<ViolationRow>(
        `SELECT ${violationColumns} FROM violations v WHERE ${filter}
         ORDER BY ${sortColumns[sort.field]} ${direction}, v.id ${direction} LIMIT ${limit} OFFSET ${offset}`,
        params,
      ),
    ]);
    return { violations: list.rows.map(toViolation), meta: pageMeta(page, count.rows[0]!.n) };
  }

  async function transition(
    teamId: string,
    id: string,
    to: keyof typeof transitions,
    input: TransitionInput,
    effect?: KeyedEffect<Violation>,
  ): Promise<Violation> {
    const note = checkNote(input.note);
    const actor = checkActor(input.actor);
    const { from, columns } = transitions[to];
    return db.transaction(async (tx) => {
      const current = await find(tx, teamId, id, true);
      if (!(from as readonly Status[]).includes(current.status)) {
        throw new ConflictError(
          `Violation '${id}' is ${current.status}; only ${from.join(' or ')} violations can be ${to}.`,
          [{ field: 'status', message: `is ${current.status}, must be ${from.join(' or ')}` }],
        );
      }
      const [byColumn, atColumn, noteColumn] = columns;
      const { rows } = await tx.query<ViolationRow>(
        `UPDATE violations v SET status = $3, ${byColumn} = $4, ${atColumn} = $5, ${noteColumn} = $6, updated_at = $5
         WHERE v.team_id = $1 AND v.id = $2 RETURNING ${violationColumns}`,
        [teamId, id, to, actor, now(), note],
      );
      const updated = toViolation(rows[0]!);
      await publishViolationChange(outbox, tx, to, updated, current.status);
      await effect?.record(tx, updated);
      return updated;
    });
  }

  /** open → acknowledged, keeping the note with the time and the actor. */
  const acknowledgeViolation = (
    teamId: string,
    id: string,
    input: TransitionInput,
    effect?: KeyedEffect<Violation>,
  ) => transition(teamId, id, 'acknowledged', input, effect);

  /** open | acknowledged → resolved; a resolved violation is never reopened. */
  const resolveViolation = (
    teamId: string,
    id: string,
    input: TransitionInput,
    effect?: KeyedEffect<Violation>,
  ) => transition(teamId, id, 'resolved', input, effect);

  return { getViolation, listViolations, acknowledgeViolation, resolveViolation };
}

export type Violations = ReturnType<typeof violationsFactory>;

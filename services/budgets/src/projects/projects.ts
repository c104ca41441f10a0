import { create } from '@bufbuild/protobuf';
import type { Outbox } from '@costgov/bus';
import { events } from '@costgov/contracts';
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
import { ConflictError, NotFoundError, Violations } from '@costgov/errors';
import { looksLikeId, type IdGenerator } from '@costgov/ids';
import type { KeyedEffect } from '@costgov/runtime';
import type { ProjectReadCache } from './detail-cache';
import type { TeamConnections } from './team-connections';
import type { TeamUsers } from './team-users';
import {
  checkApprovalRules,
  checkApproversKnown,
  checkConnectionIds,
  checkConnectionsKnown,
  checkName,
  checkStatus,
  maxApprovers,
  maxConnections,
  projectStatuses,
  wellFormedApprovers,
  type ApprovalRules,
  type ProjectStatus,
} from './validation';

export interface Project {
  id: string;
  teamId: string;
  name: string;
  status: ProjectStatus;
  connectionIds: string[];
  approvalRules: ApprovalRules | null;
  budgetCount: number;
  violationCount: number;
  createdAt: Date;
  updatedAt: Date;
}

export interface BudgetSummary {
  id: string;
  name: string;
  amount: number;
  currency: string;
  period: string;
  percentageUsed: number;
  status: string;
}

export interface ProjectDetail extends Project {
  budgets: BudgetSummary[];
}

/** Approval rules as sent: `requireApprovalAbove` absent or null means no amount limit. */
export interface ApprovalRulesInput {
  requireApprovalAbove?: number | null;
  approvers: string[];
}

export interface CreateProjectInput {
  name: string;
  connectionIds?: string[];
  approvalRules?: ApprovalRulesInput;
}

export interface UpdateProjectInput {
  name?: string;
  status?: string;
  connectionIds?: string[];
  /** null removes the rules; undefined leaves them. */
  approvalRules?: ApprovalRulesInput | null;
}

export interface ListProjectsInput {
  status?: string;
  connectionId?: string;
  page?: number;
  perPage?: number;
}

interface ProjectRow {
  id: string;
  team_id: string;
  name: string;
  status: ProjectStatus;
  connection_ids: string[];
  approval_rules: ApprovalRules | null;
  budget_count: number;
  violation_count: number;
  created_at: Date;
  updated_at: Date;
}

const selectProject = `SELECT p.*,
  (SELECT count(*) FROM budgets b WHERE b.project_id = p.id AND b.status <> 'archived')::int AS budget_count
  FROM projects p`;

/**
 * A project with `budget_count` and `budgets`: every budget summary, archived included, oldest first. The
 * most frequent read, so it runs as a prepared statement; its columns are named (not `p.*`) so that a
 * migration adding a column does not change the prepared statement's result type under running replicas.
 * Replicas cache its answers (detail-cache.ts): a budgets column added to it must also be added to the
 * update trigger's column list of migration 0003 (in a new migration), or its changes go unnoticed.
 */
const selectProjectDetail = `SELECT p.id, p.team_id, p.name, p.status, p.connection_ids, p.approval_rules,
    p.violation_count, p.created_at, p.updated_at, s.budget_count, s.budgets
  FROM projects p CROSS JOIN LATERAL (
    SELECT count(*) FILTER (WHERE b.status <> 'archived')::int AS budget_count,
      coalesce(json_agg(json_build_object(
        'id', b.id, 'name', b.name, 'amount', b.amount, 'currency', b.currency, 'period', b.period,
        'status', b.status,
        'percentageUsed', b.percentage_used
      ) ORDER BY b.created_at, b.id), '[]') AS budgets
    FROM budgets b WHERE b.team_id = p.team_id AND b.project_id = p.id) s
  WHERE p.team_id = $1 AND p.id = $2`;

// Rules stored before the amount became optional always have one; `?? null` reads both.
const approvalRulesOf = (stored: ApprovalRules | null): ApprovalRules | null =>
  stored && { requireApprovalAbove: stored.requireApprovalAbove ?? null, approvers: stored.approvers };

const toProject = (row: ProjectRow): Project => ({
  id: row.id,
  teamId: row.team_id,
  name: row.name,
  status: row.status,
  connectionIds: row.connection_ids,
  approvalRules: approvalRulesOf(row.approval_rules),
  budgetCount: row.budget_count,
  violationCount: row.violation_count,
  createdAt: row.created_at,
  updatedAt: row.updated_at,
});

/** An id that cannot be a project's is not found, without a query: text Postgres refuses never reaches it. */
function checkProjectId(id: string): void {
  if (!looksLikeId('project', id)) throw new NotFoundError('Project', id);
}

const isUniqueViolation = (error: unknown) => (error as { code?: string }).code === '23505';
const duplicateName = (name: string) =>
  new ConflictError(`A project named '${name}' already exists in this team.`, [
    { field: 'name', message: 'is taken' },
  ]);

export function projectsFactory({
  db,
  outbox,
  newId,
  now,
  teamUsers,
  teamConnections,
  onSpendInputsChanged = () => undefined,
  readCache,
}: {
  db: Db;
  outbox: Outbox;
  newId: IdGenerator;
  now: () => Date;
  teamUsers: TeamUsers;
  teamConnections: TeamConnections;
  /** Called after a change that alters what the project's budgets count (their connections). */
  onSpendInputsChanged?: () => void;
  /** Answers project reads from memory where no committed change can have passed them (detail-cache.ts). */
  readCache?: ProjectReadCache;
}) {
  /**
   * Every approver must be an active user of the team, which identity knows: asked after the local
   * checks so one answer carries every field error. Identity down rejects with UnavailableError (503).
   */
  async function checkApprovers(violations: Violations, teamId: string, rules: ApprovalRulesInput) {
    const asked = [...new Set(wellFormedApprovers(rules.approvers))];
    if (asked.length === 0 || rules.approvers.length > maxApprovers) return; // too many: already refused
    checkApproversKnown(violations, rules.approvers, await teamUsers.activeUserIds(teamId, asked));
  }

  /**
   * Every connection must be one of the team's, which costs knows: asked after the local checks so one
   * answer carries every field error. Costs down rejects with UnavailableError (503).
   */
  async function checkConnections(violations: Violations, teamId: string, ids: string[]) {
    const asked = [...new Set(ids.filter((id) => looksLikeId('connection', id)))];
    if (asked.length === 0 || ids.length > maxConnections) return; // too many: already refused
    checkConnectionsKnown(violations, ids, await teamConnections.missingIds(teamId, asked));
  }

  async function publishChange(
    tx: Queryable,
    type: 'created' | 'updated',
    project: Project,
    changedFields: string[],
  ) {
    await outbox.addMessage(tx, {
      type: `budgets.project.${type}`,
      subject: project.id,
      schema: events.ProjectChangedSchema,
      message: create(events.ProjectChangedSchema, {
        projectId: project.id,
        teamId: project.teamId,
        name: project.name,
        status: project.status,
        connectionIds: project.connectionIds,
        changedFields,
      }),
    });
  }

  async function find(tx: Queryable, teamId: string, id: string, lock = false): Promise<Project> {
    checkProjectId(id);
    const { rows } = await tx.query<ProjectRow>(
      `${selectProject} WHERE p.team_id = $1 AND p.id = $2${lock ? ' FOR UPDATE' : ''}`,
      [teamId, id],
    );
    if (!rows[0]) throw new NotFoundError('Project', id);
    return toProject(rows[0]);
  }

  /** `effect`: the caller's Idempotency-Key, recorded with the project (libs/runtime idempotency.ts). */
  async function createProject(
    teamId: string,
    input: CreateProjectInput,
    effect?: KeyedEffect<Project>,
  ): Promise<Project> {
    const violations = new Violations();
    const name = checkName(violations, input.name);
    const connectionIds = checkConnectionIds(violations, input.connectionIds ?? []);
    const approvalRules = input.approvalRules ? checkApprovalRules(violations, input.approvalRules) : null;
    if (input.approvalRules) await checkApprovers(violations, teamId, input.approvalRules);
    await checkConnections(violations, teamId, input.connectionIds ?? []);
    violations.throwIfAny();
    try {
      return await db.transaction(async (tx) => {
        const at = now();
        const { rows } = await tx.query<ProjectRow>(
          `INSERT INTO projects (id, team_id, name, connection_ids, approval_rules, created_at, updated_at)
           VALUES ($1, $2, $3, $4, $5, $6, $6) RETURNING *, 0 AS budget_count`,
          [newId('project'), teamId, name, connectionIds, approvalRules && JSON.stringify(approvalRules), at],
        );
        const project = toProject(rows[0]!);
        await publishChange(tx, 'created', project, []);
        await effect?.record(tx, project);
        return project;
      });
    } catch (error) {
      if (isUniqueViolation(error)) throw duplicateName(name);
      throw error;
    }
  }

  async function getProject(teamId: string, id: string): Promise<ProjectDetail> {
    checkProjectId(id);
    return readCache ? readCache.read(teamId, id, () => loadProject(teamId, id)) : loadProject(teamId, id);
  }

  // The project and its budget summaries in one statement: one round trip for the most frequent read.
  async function loadProject(teamId: string, id: string): Promise<ProjectDetail> {
    const { rows } = await db.query<ProjectRow & { budgets: BudgetSummary[] }>(
      selectProjectDetail,
      [teamId, id],
      { name: 'budgets_project_detail' },
    );
    if (!rows[0]) throw new NotFoundError('Project', id);
    return { ...toProject(rows[0]), budgets: rows[0].budgets };
  }

  async function listProjects(
    teamId: string,
    input: ListProjectsInput,
  ): Promise<{ projects: Project[]; meta: PageMeta }> {
    const page = pageOf(input);
    const status = enumFilter('status', input.status, projectStatuses);
    const connectionId = textFilter('connection_id', input.connectionId);
    const where = ['p.team_id = $1'];
    const params: unknown[] = [teamId];
    if (status !== undefined) where.push(`p.status = $${params.push(status)}`);
    if (connectionId !== undefined) where.push(`$${params.push(connectionId)} = ANY (p.connection_ids)`);
    const filter = where.join(' AND ');
    const { limit, offset } = limitOffset(page);
    const [count, list] = await Promise.all([
      db.query<{ n: number }>(`SELECT count(*)::int AS n FROM projects p WHERE ${filter}`, params),
      db.query<ProjectRow>(
        `${selectProject} WHERE ${filter} ORDER BY p.created_at DESC, p.id DESC LIMIT ${limit} OFFSET ${offset}`,
        params,
      ),
    ]);
    return { projects: list.rows.map(toProject), meta: pageMeta(page, count.rows[0]!.n) };
  }

  async function updateProject(teamId: string, id: string, input: UpdateProjectInput): Promise<Project> {
    const violations = new Violations();
    const name = input.name === undefined ? undefined : checkName(violations, input.name);
    const status = input.status === undefined ? undefined : checkStatus(violations, input.status);
    const connectionIds = input.connectionIds && checkConnectionIds(violations, input.connectionIds);
    const approvalRules = input.approvalRules && checkApprovalRules(violations, input.approvalRules);
    if (input.approvalRules) await checkApprovers(violations, teamId, input.approvalRules);
    if (input.connectionIds) await checkConnections(violations, teamId, input.connectionIds);
    violations.throwIfAny();
    let connectionsChanged = false;
    try {
      const updated = await db.transaction(async (tx) => {
        const current = await find(tx, teamId, id, true);
        const next: Project = {
          ...current,
          name: name ?? current.name,
          status: status ?? current.status,
          connectionIds: connectionIds ?? current.connectionIds,
          approvalRules: input.approvalRules === null ? null : (approvalRules ?? current.approvalRules),
        };
        const changed = (['name', 'status', 'connectionIds', 'approvalRules'] as const).filter(
          (field) => JSON.stringify(current[field]) !== JSON.stringify(next[field]),
        );
        if (changed.length === 0) return current;
        const { rows } = await tx.query<{ updated_at: Date }>(
          `UPDATE projects SET name = $3, status = $4, connection_ids = $5, approval_rules = $6, updated_at = $7
           WHERE team_id = $1 AND id = $2 RETURNING updated_at`,
          [
            teamId,
            id,
            next.name,
            next.status,
            next.connectionIds,
            next.approvalRules && JSON.stringify(next.approvalRules),
            now(),
          ],
        );
        const updated = { ...next, updatedAt: rows[0]!.updated_at };
        await publishChange(tx, 'updated', updated, changed.map(snakeCase));
        connectionsChanged = changed.includes('connectionIds');
        if (connectionsChanged) {
          // Locked in id order, as every evaluation locks budgets, so the two cannot deadlock.
          await tx.query(
            `UPDATE budgets SET needs_evaluation = true WHERE id IN (
               SELECT id FROM budgets WHERE team_id = $1 AND project_id = $2 ORDER BY id FOR UPDATE)`,
            [teamId, id],
          );
        }
        return updated;
      });
      if (connectionsChanged) onSpendInputsChanged();
      return updated;
    } catch (error) {
      if (isUniqueViolation(error) && name !== undefined) throw duplicateName(name);
      throw error;
    }
  }

  /** Removes the project and its budgets now; owners of its other data purge it on `project.deleted`. */
  async function deleteProject(teamId: string, id: string): Promise<void> {
    checkProjectId(id);
    await db.transaction(async (tx) => {
      const { rowCount } = await tx.query('DELETE FROM projects WHERE team_id = $1 AND id = $2', [
        teamId,
        id,
      ]);
      if (rowCount === 0) throw new NotFoundError('Project', id);
      await outbox.addMessage(tx, {
        type: 'budgets.project.deleted',
        subject: id,
        schema: events.ProjectDeletedSchema,
        message: create(events.ProjectDeletedSchema, { projectId: id, teamId }),
      });
    });
  }

  /**
   * A deleted connection leaves every project of the team that listed it (costs publishes
   * `costs.connection.deleted`); runs in the consumer's inbox transaction, so a redelivery changes nothing.
   */
  async function forgetConnection(tx: Queryable, teamId: string, connectionId: string): Promise<number> {
    const { rows } = await tx.query<ProjectRow>(
      `WITH changed AS (
         UPDATE projects SET connection_ids = array_remove(connection_ids, $2), updated_at = now()
         WHERE team_id = $1 AND $2 = ANY(connection_ids) RETURNING *
       )
       SELECT p.*,
         (SELECT count(*) FROM budgets b WHERE b.project_id = p.id AND b.status <> 'archived')::int AS budget_count
       FROM changed p`,
      [teamId, connectionId],
    );
    for (const row of rows) await publishChange(tx, 'updated', toProject(row), ['connection_ids']);
    return rows.length;
  }

  return { createProject, getProject, listProjects, updateProject, deleteProject, forgetConnection };
}

const snakeCase = (field: string) => field.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`);

export type Projects = ReturnType<typeof projectsFactory>;

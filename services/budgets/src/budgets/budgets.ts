import { create } from '@bufbuild/protobuf';
import type { Outbox } from '@costgov/bus';
import { events } from '@costgov/contracts';
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
import { ConflictError, NotFoundError, Violations } from '@costgov/errors';
import { looksLikeId, type IdGenerator } from '@costgov/ids';
import type { KeyedEffect } from '@costgov/runtime';
import type { Threshold } from './evaluation';
import type { BudgetEvaluator } from './evaluator';
import { percentageUsed, periodOf, type BudgetPeriod } from './period';
import { budgetColumns, storedThresholds, toBudget, type Budget, type BudgetRow } from './record';
import {
  budgetSortFields,
  budgetStatuses,
  checkAmount,
  checkCurrency,
  checkName,
  checkPeriod,
  checkSettableStatus,
  checkTags,
  checkThresholds,
  defaultPeriod,
  defaultThresholds,
  type BudgetSortField,
} from './validation';

export interface CreateBudgetInput {
  projectId: string;
  name: string;
  amount: number;
  currency: string;
  /** Absent or empty: monthly. */
  period?: string;
  /** Absent or empty: 50, 80 and 100 %. */
  thresholds?: number[];
  tags?: Record<string, string>;
}

export interface UpdateBudgetInput {
  name?: string;
  amount?: number;
  currency?: string;
  period?: string;
  thresholds?: number[];
  tags?: Record<string, string>;
  status?: string;
}

export interface ListBudgetsInput {
  projectId?: string;
  status?: string;
  sort?: { field: string; descending: boolean };
  page?: number;
  perPage?: number;
}

const sortColumns: Record<BudgetSortField, string> = {
  amount: 'b.amount',
  // Case-insensitive and by code point, the same on Postgres and PGlite whatever their locale.
  name: 'lower(b.name) COLLATE "C"',
  created_at: 'b.created_at',
  current_spend: 'b.current_spend',
  percentage_used: 'b.percentage_used',
};

/** Fields whose change alters the spend counted or how it is judged. */
const spendFields = new Set(['amount', 'currency', 'period', 'thresholds', 'tags', 'status']);

const isUniqueViolation = (error: unknown) => (error as { code?: string }).code === '23505';
const duplicateName = (name: string) =>
  new ConflictError(`A budget named '${name}' already exists in this project.`, [
    { field: 'name', message: 'is taken' },
  ]);

/** An id that cannot be a budget's is not found, without a query. */
function checkBudgetId(id: string): void {
  if (!looksLikeId('budget', id)) throw new NotFoundError('Budget', id);
}

export function budgetsFactory({
  db,
  outbox,
  newId,
  now,
  evaluator,
}: {
  db: Db;
  outbox: Outbox;
  newId: IdGenerator;
  now: () => Date;
  evaluator: BudgetEvaluator;
}) {
  async function publishChange(
    tx: Queryable,
    type: 'created' | 'updated' | 'deleted',
    budget: Pick<
      BudgetRow,
      'id' | 'team_id' | 'project_id' | 'name' | 'amount' | 'currency' | 'period' | 'status'
    >,
    changedFields: string[] = [],
  ) {
    await outbox.addMessage(tx, {
      type: `budgets.budget.${type}`,
      subject: budget.id,
      schema: events.BudgetChangedSchema,
      message: create(events.BudgetChangedSchema, {
        budgetId: budget.id,
        teamId: budget.team_id,
        projectId: budget.project_id,
        name: budget.name,
        amount: budget.amount,
        currency: budget.currency,
        period: budget.period,
        status: budget.status,
        changedFields,
      }),
    });
  }

  async function findRow(tx: Queryable, teamId: string, id: string, lock = false): Promise<BudgetRow> {
    checkBudgetId(id);
    const { rows } = await tx.query<BudgetRow>(
      `SELECT ${budgetColumns} FROM budgets b WHERE b.team_id = $1 AND b.id = $2${lock ? ' FOR UPDATE' : ''}`,
      [teamId, id],
    );
    if (!rows[0]) throw new NotFoundError('Budget', id);
    return rows[0];
  }

  async function getBudget(teamId: string, id: string): Promise<Budget> {
    return toBudget(await findRow(db, teamId, id), now());
  }

  /**
   * Stores the budget and evaluates it at once, so the answer already shows its spend (and may say
   * `breached`). With costs down the budget is still created, with no spend yet, and evaluated later.
   * `effect`, the caller's Idempotency-Key, keeps the budget's id in the insert's transaction and the
   * answer once the budget is evaluated: a retry after a crash between the two evaluates and answers that
   * budget instead of making another.
   */
  async function createBudget(
    teamId: string,
    input: CreateBudgetInput,
    effect?: KeyedEffect<Budget>,
  ): Promise<Budget> {
    const violations = new Violations();
    violations.check(input.projectId.trim().length > 0, 'project_id', 'is required');
    const checked = {
      name: checkName(violations, input.name),
      amount: checkAmount(violations, input.amount),
      currency: checkCurrency(violations, input.currency),
      period: input.period ? checkPeriod(violations, input.period) : defaultPeriod,
      thresholds: input.thresholds?.length
        ? checkThresholds(violations, input.thresholds)
        : defaultThresholds,
      tags: checkTags(violations, input.tags ?? {}),
    };
    violations.throwIfAny();
    const id = effect?.reserved ?? newId('budget');
    if (!effect?.reserved) {
      try {
        await db.transaction(async (tx) => {
          await insertBudget(tx, teamId, id, input.projectId, checked);
          await effect?.reserve(tx, id);
        });
      } catch (error) {
        if (isUniqueViolation(error)) throw duplicateName(checked.name);
        throw error;
      }
    }
    await evaluator.evaluateBudget(id);
    const budget = await getBudget(teamId, id);
    await effect?.record(db, budget);
    return budget;
  }

  async function insertBudget(
    tx: Queryable,
    teamId: string,
    id: string,
    projectId: string,
    budget: {
      name: string;
      amount: number;
      currency: string;
      period: BudgetPeriod;
      thresholds: number[];
      tags: Record<string, string>;
    },
  ): Promise<void> {
    if (!looksLikeId('project', projectId)) throw new NotFoundError('Project', projectId);
    // FOR SHARE: the project cannot be archived or deleted until this budget is in.
    const { rows } = await tx.query<{ status: string }>(
      'SELECT status FROM projects WHERE team_id = $1 AND id = $2 FOR SHARE',
      [teamId, projectId],
    );
    if (!rows[0]) throw new NotFoundError('Project', projectId);
    if (rows[0].status === 'archived') {
      throw new ConflictError(`Project '${projectId}' is archived and accepts no new budgets.`, [
        { field: 'project_id', message: 'is archived' },
      ]);
    }
    const at = now();
    const { name, amount, currency, period, thresholds, tags } = budget;
    await tx.query(
      `INSERT INTO budgets (id, team_id, project_id, name, amount, currency, period, thresholds, tags,
         period_start, needs_evaluation, created_at, updated_at)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, true, $11, $11)`,
      [
        id,
        teamId,
        projectId,
        name,
        amount,
        currency,
        period,
        storedThresholds(thresholds.map((percentage) => ({ percentage, notifiedAt: null }))),
        JSON.stringify(tags),
        periodOf(period, at).start,
        at,
      ],
    );
    const row = {
      id,
      team_id: teamId,
      project_id: projectId,
      name,
      amount,
      currency,
      period,
      status: 'active' as const,
    };
    await publishChange(tx, 'created', row);
  }

  async function listBudgets(
    teamId: string,
    input: ListBudgetsInput,
  ): Promise<{ budgets: Budget[]; meta: PageMeta }> {
    const page = pageOf(input);
    const status = enumFilter('status', input.status, budgetStatuses);
    const projectId = textFilter('project_id', input.projectId);
    const sort = sortOf(input.sort, budgetSortFields, { field: 'created_at', descending: true });
    const direction = sort.descending ? 'DESC' : 'ASC';
    const where = ['b.team_id = $1'];
    const params: unknown[] = [teamId];
    if (status !== undefined) where.push(`b.status = $${params.push(status)}`);
    if (projectId !== undefined) where.push(`b.project_id = $${params.push(projectId)}`);
    const filter = where.join(' AND ');
    const { limit, offset } = limitOffset(page);
    const [count, list] = await Promise.all([
      db.query<{ n: number }>(`SELECT count(*)::int AS n FROM budgets b WHERE ${filter}`, params),
      db.query<BudgetRow>(
        `SELECT ${budgetColumns} FROM budgets b WHERE ${filter}
         ORDER BY ${sortColumns[sort.field]} ${direction}, b.id ${direction}
         LIMIT ${limit} OFFSET ${offset}`,
        params,
      ),
    ]);
    const at = now();
    return { budgets: list.rows.map((row) => toBudget(row, at)), meta: pageMeta(page, count.rows[0]!.n) };
  }

  /**
   * Changes the fields given. `status` only archives (no more evaluation) or restores (`active`: the
   * evaluation decides whether it is breached). A new `period` starts its thresholds afresh; thresholds
   * kept across a change keep their notified time. Raising the amount above spend makes a breached
   * budget active at once, even before the evaluation that follows.
   */
  async function updateBudget(teamId: string, id: string, input: UpdateBudgetInput): Promise<Budget> {
    const violations = new Violations();
    const name = input.name === undefined ? undefined : checkName(violations, input.name);
    const amount = input.amount === undefined ? undefined : checkAmount(violations, input.amount);
    const currency = input.currency === undefined ? undefined : checkCurrency(violations, input.currency);
    const period = input.period === undefined ? undefined : checkPeriod(violations, input.period);
    const thresholds = input.thresholds && checkThresholds(violations, input.thresholds);
    const tags = input.tags && checkTags(violations, input.tags);
    const status = input.status === undefined ? undefined : checkSettableStatus(violations, input.status);
    violations.throwIfAny();
    let evaluate = false;
    try {
      await db.transaction(async (tx) => {
        const current = await findRow(tx, teamId, id, true);
        const currentThresholds = toBudget(current, now()).thresholds;
        const next = {
          name: name ?? current.name,
          amount: amount ?? current.amount,
          currency: currency ?? current.currency,
          period: (period ?? current.period) as BudgetPeriod,
          thresholds: thresholds ?? currentThresholds.map((t) => t.percentage),
          tags: tags ?? current.tags,
          status:
            status === 'archived'
              ? 'archived'
              : status === 'active' && current.status === 'archived'
                ? 'active'
                : current.status,
        };
        const changed = (
          ['name', 'amount', 'currency', 'period', 'thresholds', 'tags', 'status'] as const
        ).filter(
          (field) =>
            JSON.stringify(
              field === 'thresholds' ? currentThresholds.map((t) => t.percentage) : current[field],
            ) !== JSON.stringify(next[field]),
        );
        if (changed.length === 0) return;
        const newPeriod = next.period !== current.period;
        const notified = new Map(currentThresholds.map((t) => [t.percentage, t.notifiedAt]));
        const nextThresholds: Threshold[] = next.thresholds.map((percentage) => ({
          percentage,
          notifiedAt: newPeriod ? null : (notified.get(percentage) ?? null),
        }));
        const used = percentageUsed(current.current_spend, next.amount);
        const nextStatus = next.status === 'breached' && used < 100 ? 'active' : next.status;
        evaluate = changed.some((field) => spendFields.has(field)) && nextStatus !== 'archived';
        await tx.query(
          `UPDATE budgets SET name = $3, amount = $4, currency = $5, period = $6, thresholds = $7, tags = $8,
             status = $9, percentage_used = $10, period_start = $11, needs_evaluation = needs_evaluation OR $12,
             updated_at = $13
           WHERE team_id = $1 AND id = $2`,
          [
            teamId,
            id,
            next.name,
            next.amount,
            next.currency,
            next.period,
            storedThresholds(nextThresholds),
            JSON.stringify(next.tags),
            nextStatus,
            used,
            // No period start: the evaluation treats it as a new period (thresholds and breach afresh).
            newPeriod ? null : current.period_start,
            evaluate,
            now(),
          ],
        );
        await publishChange(tx, 'updated', { ...current, ...next, status: nextStatus }, [...changed]);
      });
    } catch (error) {
      if (isUniqueViolation(error) && name !== undefined) throw duplicateName(name);
      throw error;
    }
    if (evaluate) await evaluator.evaluateBudget(id);
    return getBudget(teamId, id);
  }

  async function deleteBudget(teamId: string, id: string): Promise<void> {
    checkBudgetId(id);
    await db.transaction(async (tx) => {
      const { rows } = await tx.query<BudgetRow>(
        `DELETE FROM budgets b WHERE b.team_id = $1 AND b.id = $2 RETURNING ${budgetColumns}`,
        [teamId, id],
      );
      if (!rows[0]) throw new NotFoundError('Budget', id);
      await publishChange(tx, 'deleted', rows[0]);
    });
  }

  /**
   * The current period of every budget (not archived) of the team's active projects reading
   * `connectionId`, at the clock's now: what an upload of that connection's data is compared with.
   */
  async function connectionBudgetPeriods(
    teamId: string,
    connectionId: string,
  ): Promise<
    Array<{ budgetId: string; projectId: string; period: BudgetPeriod; periodStart: Date; periodEnd: Date }>
  > {
    if (!looksLikeId('connection', connectionId)) return [];
    const { rows } = await db.query<{ id: string; project_id: string; period: BudgetPeriod }>(
      `SELECT b.id, b.project_id, b.period FROM budgets b JOIN projects p ON p.id = b.project_id
       WHERE b.team_id = $1 AND $2 = ANY (p.connection_ids) AND b.status <> 'archived' AND p.status = 'active'
       ORDER BY b.id`,
      [teamId, connectionId],
    );
    const at = now();
    return rows.map((row) => {
      const { start, end } = periodOf(row.period, at);
      return {
        budgetId: row.id,
        projectId: row.project_id,
        period: row.period,
        periodStart: start,
        periodEnd: end,
      };
    });
  }

  return { createBudget, getBudget, listBudgets, updateBudget, deleteBudget, connectionBudgetPeriods };
}

export type Budgets = ReturnType<typeof budgetsFactory>;

import { create } from '@bufbuild/protobuf';
import type { Outbox } from '@costgov/bus';
import { events } from '@costgov/contracts';
import type { Db, Queryable } from '@costgov/db';
import { DomainError, UnavailableError } from '@costgov/errors';
import type { Logger } from '@costgov/log';
import { evaluate } from './evaluation';
import { evaluationMetrics } from './metrics';
import { dayOf, periodOf, type BudgetPeriod } from './period';
import { budgetColumns, storedThresholds, thresholdsOf, type BudgetRow } from './record';
import type { Spend, SpendSource } from './spend';

type LockedRow = BudgetRow & { project_name: string; connection_ids: string[] };

const noSpend: Spend = { converted: 0, unconverted: [], lastChargeDay: null, usage: 0, lastUsageDay: null };
const dayMs = 86_400_000;

/**
 * Where the spend counted now ends: the period's end, or the end of the current UTC day when that comes
 * first. A charge dated after today has not been incurred (a provider's estimate, or a wrong clock); it
 * is counted once its day has begun (the sweep evaluates every budget again on each new UTC day), and
 * the upload that brought it says so (`future_charges` warning).
 */
const countedUntil = (periodEnd: Date, at: Date): Date =>
  new Date(Math.min(periodEnd.getTime(), (Math.floor(at.getTime() / dayMs) + 1) * dayMs));

/**
 * Evaluates budgets: asks costs for the spend of the current period, stores it, and writes the threshold
 * and breach events in the same transaction. A budget is evaluated under its row lock (SELECT ... FOR
 * UPDATE), so budgets replicas never evaluate one budget at the same time, and a second evaluation sees
 * the first one's notified thresholds and crosses nothing again.
 */
export function budgetEvaluator({
  db,
  outbox,
  now,
  spendSource,
  logger,
}: {
  db: Db;
  outbox: Outbox;
  now: () => Date;
  spendSource: SpendSource;
  logger: Logger;
}) {
  /**
   * Evaluates one budget in `tx`; false when another evaluation holds it (`skipLocked`) or it is gone.
   * Rejects with UnavailableError when costs is down, before anything was written.
   */
  async function evaluateIn(tx: Queryable, budgetId: string, skipLocked = false): Promise<boolean> {
    const { rows } = await tx.query<LockedRow>(
      `SELECT ${budgetColumns}, p.name AS project_name, p.connection_ids
       FROM budgets b JOIN projects p ON p.id = b.project_id
       WHERE b.id = $1 FOR UPDATE OF b${skipLocked ? ' SKIP LOCKED' : ''}`,
      [budgetId],
    );
    const row = rows[0];
    if (!row) return false;
    if (row.status === 'archived') {
      await tx.query('UPDATE budgets SET needs_evaluation = false WHERE id = $1', [row.id]);
      return true;
    }
    const at = now();
    const range = periodOf(row.period, at);
    const spend =
      row.connection_ids.length === 0
        ? noSpend
        : await spendSource.spendOf({
            teamId: row.team_id,
            connectionIds: row.connection_ids,
            from: range.start,
            to: countedUntil(range.end, at),
            tags: row.tags,
            currency: row.currency,
          });
    for (const { currency } of spend.unconverted) {
      evaluationMetrics.unconvertedSpend.inc({ from_currency: currency, to_currency: row.currency });
    }
    if (spend.unconverted.length > 0) {
      logger.warn(
        { budget_id: row.id, currency: row.currency, unconverted: spend.unconverted },
        'spend without an exchange rate to the budget currency is not counted',
      );
    }
    const outcome = evaluate(
      {
        status: row.status,
        amount: row.amount,
        thresholds: thresholdsOf(row.thresholds),
        periodStart: row.period_start,
      },
      spend.converted,
      range,
      at,
    );
    await tx.query(
      `UPDATE budgets SET current_spend = $2, percentage_used = $3, unconverted_spend = $4, last_charge_day = $5,
         period_start = $6, thresholds = $7, status = $8, evaluated_at = $9, needs_evaluation = false,
         usage_spend = $10, last_usage_day = $11
       WHERE id = $1`,
      [
        row.id,
        spend.converted,
        outcome.percentageUsed,
        JSON.stringify(spend.unconverted),
        spend.lastChargeDay,
        range.start,
        storedThresholds(outcome.thresholds),
        outcome.status,
        at,
        spend.usage,
        spend.lastUsageDay,
      ],
    );
    evaluationMetrics.evaluations.inc({ outcome: 'evaluated' });
    const crossing = (threshold: number) =>
      create(events.BudgetThresholdCrossedSchema, {
        budgetId: row.id,
        teamId: row.team_id,
        projectId: row.project_id,
        budgetName: row.name,
        projectName: row.project_name,
        threshold,
        percentageUsed: outcome.percentageUsed,
        currentSpend: spend.converted,
        amount: row.amount,
        currency: row.currency,
        period: row.period,
        periodStart: dayOf(range.start),
        periodEnd: dayOf(range.end),
      });
    for (const threshold of outcome.crossed) {
      await outbox.addMessage(tx, {
        type: 'budgets.budget.threshold_crossed',
        subject: row.id,
        schema: events.BudgetThresholdCrossedSchema,
        message: crossing(threshold),
      });
    }
    if (outcome.breached) {
      await outbox.addMessage(tx, {
        type: 'budgets.budget.breached',
        subject: row.id,
        schema: events.BudgetThresholdCrossedSchema,
        message: crossing(100),
      });
    }
    if (outcome.status !== row.status) {
      await outbox.addMessage(tx, {
        type: 'budgets.budget.updated',
        subject: row.id,
        schema: events.BudgetChangedSchema,
        message: create(events.BudgetChangedSchema, {
          budgetId: row.id,
          teamId: row.team_id,
          projectId: row.project_id,
          name: row.name,
          amount: row.amount,
          currency: row.currency,
          period: row.period as BudgetPeriod,
          status: outcome.status,
          changedFields: ['status'],
        }),
      });
    }
    return true;
  }

  /**
   * Evaluates one budget in a transaction of its own. A failure is not the caller's (its change is
   * committed): the budget keeps `needs_evaluation` and its last evaluated spend, and the sweep tries
   * again. Costs being down is expected now and then; anything else is logged as an error.
   */
  async function evaluateBudget(budgetId: string, skipLocked = false): Promise<boolean> {
    try {
      return await db.transaction((tx) => evaluateIn(tx, budgetId, skipLocked));
    } catch (error) {
      const unavailable = error instanceof UnavailableError;
      evaluationMetrics.evaluations.inc({ outcome: unavailable ? 'deferred' : 'failed' });
      if (unavailable) {
        logger.warn(
          { budget_id: budgetId, err: error },
          'budget evaluation deferred: costs or the database unavailable',
        );
      } else {
        logger.error({ budget_id: budgetId, err: error }, 'budget evaluation failed; retried by the sweep');
      }
      return false;
    }
  }

  /**
   * New cost data of a connection: evaluates, inside the consumer's transaction, every budget whose
   * project reads that connection (in id order, so concurrent evaluations lock in one order). What costs
   * does not answer keeps `needs_evaluation` for the sweep, and the event is still acknowledged.
   */
  async function evaluateConnection(tx: Queryable, teamId: string, connectionId: string): Promise<number> {
    const { rows } = await tx.query<{ id: string }>(
      `SELECT b.id FROM budgets b JOIN projects p ON p.id = b.project_id
       WHERE b.team_id = $1 AND $2 = ANY (p.connection_ids) AND b.status <> 'archived' ORDER BY b.id`,
      [teamId, connectionId],
    );
    for (const [index, { id }] of rows.entries()) {
      try {
        await evaluateIn(tx, id);
      } catch (error) {
        // A database error leaves the transaction unusable: the event is redelivered instead.
        if (!(error instanceof DomainError)) throw error;
        // Costs down: the rest would fail the same way. Costs refusing one budget: the others go on.
        const deferred = error instanceof UnavailableError ? rows.slice(index).map((r) => r.id) : [id];
        evaluationMetrics.evaluations.inc(
          { outcome: error instanceof UnavailableError ? 'deferred' : 'failed' },
          deferred.length,
        );
        await tx.query('UPDATE budgets SET needs_evaluation = true WHERE id = ANY ($1)', [deferred]);
        logger.warn({ budgets: deferred.length, err: error }, 'budget evaluation deferred to the sweep');
        if (error instanceof UnavailableError) break;
      }
    }
    return rows.length;
  }

  /**
   * Evaluates every budget that needs it: marked (changed, new data, deferred), still on an earlier
   * period than the clock's (the period boundary), or last evaluated before the current UTC day (charges
   * dated today count from today on, see countedUntil). Each in its own transaction, skipping budgets
   * another replica is evaluating; a budget whose evaluation fails is tried again on the next sweep.
   */
  async function sweep(): Promise<number> {
    const at = now();
    const starts = (['monthly', 'quarterly', 'yearly'] as const).map((p) => periodOf(p, at).start);
    const today = new Date(Math.floor(at.getTime() / dayMs) * dayMs);
    let after = '';
    let evaluated = 0;
    for (;;) {
      const { rows } = await db.query<{ id: string }>(
        `SELECT id FROM budgets
         WHERE status <> 'archived' AND id > $1 AND (needs_evaluation OR period_start IS NULL OR period_start <>
           CASE period WHEN 'monthly' THEN $2::timestamptz WHEN 'quarterly' THEN $3::timestamptz ELSE $4::timestamptz END
           OR evaluated_at < $5)
         ORDER BY id LIMIT 200`,
        [after, ...starts, today],
      );
      if (rows.length === 0) return evaluated;
      for (const { id } of rows) if (await evaluateBudget(id, true)) evaluated++;
      after = rows.at(-1)!.id;
    }
  }

  let timer: NodeJS.Timeout | undefined;
  let running: Promise<unknown> | undefined;
  let again = false;
  let stopped = false;

  /** Runs a sweep now, or right after the one in progress. */
  function sweepSoon(): void {
    if (stopped) return;
    if (running) {
      again = true;
      return;
    }
    running = sweep()
      .catch((error: unknown) => logger.error({ err: error }, 'budget sweep failed'))
      .finally(() => {
        running = undefined;
        if (again) {
          again = false;
          sweepSoon();
        }
      });
  }

  return {
    evaluateIn,
    evaluateBudget,
    evaluateConnection,
    sweep,
    sweepSoon,
    /** Sweeps every `intervalMs`, which also notices period boundaries within that time. */
    start(intervalMs: number) {
      timer = setInterval(sweepSoon, intervalMs);
      timer.unref();
      sweepSoon();
    },
    async stop() {
      stopped = true;
      clearInterval(timer);
      while (running) await running;
    },
  };
}

export type BudgetEvaluator = ReturnType<typeof budgetEvaluator>;

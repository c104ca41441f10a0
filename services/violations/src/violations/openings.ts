import { decodeEvent, type CloudEvent, type Outbox } from '@costgov/bus';
import { events } from '@costgov/contracts';
import type { Queryable } from '@costgov/db';
import type { IdGenerator } from '@costgov/ids';
import type { Logger } from '@costgov/log';
import { publishViolationChange } from './changes';
import { breachMessage } from './message';
import { toViolation, violationColumns, violationType, type Severity, type ViolationRow } from './violation';

/** The event types that open violations; both arrive on one durable so their order is kept. */
export const openingEventTypes = ['budgets.budget.threshold_crossed', 'budgets.budget.breached'] as const;

/** Severity of crossing a threshold of this many percent of the budget. */
export function severityOf(thresholdPercentage: number): Severity {
  if (thresholdPercentage >= 100) return 'critical';
  if (thresholdPercentage >= 80) return 'warning';
  return 'info';
}

const isDay = (value: string) => /^\d{4}-\d{2}-\d{2}$/.test(value) && !Number.isNaN(Date.parse(value));

/** Why a crossing cannot open a violation, or undefined when it can. */
function problemOf(crossing: events.BudgetThresholdCrossed): string | undefined {
  if (!crossing.budgetId || !crossing.teamId || !crossing.projectId) return 'no budget, team or project id';
  if (!(crossing.threshold > 0) || !Number.isFinite(crossing.threshold)) return 'no positive threshold';
  if (!(crossing.amount > 0) || !Number.isFinite(crossing.amount)) return 'no positive budget amount';
  if (!Number.isFinite(crossing.currentSpend)) return 'no spend';
  if (!isDay(crossing.periodStart)) return 'no period start';
  return undefined;
}

/**
 * Opens one violation per budget, threshold and period. A redelivered event is stopped by the inbox; the
 * same crossing reported again (a replay, or `budget.breached` after the 100 % threshold's own event) by
 * the unique key, so only the first report writes a violation and `violations.violation.created`.
 * `budget.breached` reports the 100 % crossing: it opens the critical violation of a budget whose
 * thresholds lack 100, and nothing more when the 100 % threshold already did.
 */
export function violationOpenings({
  outbox,
  newId,
  now,
  logger,
}: {
  outbox: Outbox;
  newId: IdGenerator;
  now: () => Date;
  logger: Logger;
}) {
  return async function openViolation(tx: Queryable, event: CloudEvent): Promise<void> {
    const crossing = decodeEvent(events.BudgetThresholdCrossedSchema, event);
    if (event.type === 'budgets.budget.breached' && !crossing.threshold) crossing.threshold = 100;
    const log = { event_id: event.id, event_type: event.type, budget_id: crossing.budgetId };
    const problem = problemOf(crossing);
    if (problem) {
      // Retrying cannot mend the payload: it is logged and passed over.
      logger.error({ ...log, problem }, 'threshold event cannot open a violation');
      return;
    }
    const { rows: purged } = await tx.query(
      `SELECT 1 FROM budget_purges WHERE budget_id = $1
       UNION ALL SELECT 1 FROM project_purges WHERE project_id = $2 LIMIT 1`,
      [crossing.budgetId, crossing.projectId],
    );
    if (purged.length > 0) {
      logger.info(log, 'threshold event for a deleted budget or project: nothing opened');
      return;
    }
    const thresholdValue = Number(((crossing.amount * crossing.threshold) / 100).toFixed(6));
    const at = now();
    const { rows } = await tx.query<ViolationRow>(
      `INSERT INTO violations AS v (id, team_id, project_id, budget_id, type, severity, message, current_value,
         threshold_value, threshold_percentage, currency, period_start, created_at, updated_at)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $13)
       ON CONFLICT (budget_id, threshold_percentage, period_start) DO NOTHING
       RETURNING ${violationColumns}`,
      [
        newId('violation'),
        crossing.teamId,
        crossing.projectId,
        crossing.budgetId,
        violationType,
        severityOf(crossing.threshold),
        breachMessage(crossing, thresholdValue),
        crossing.currentSpend,
        thresholdValue,
        crossing.threshold,
        crossing.currency,
        crossing.periodStart,
        at,
      ],
    );
    if (!rows[0]) {
      logger.debug({ ...log, threshold: crossing.threshold }, 'violation already open for this crossing');
      return;
    }
    const violation = toViolation(rows[0]);
    await publishViolationChange(outbox, tx, 'created', violation, '');
    logger.info(
      { ...log, violation_id: violation.id, severity: violation.severity, threshold: crossing.threshold },
      'violation opened',
    );
  };
}

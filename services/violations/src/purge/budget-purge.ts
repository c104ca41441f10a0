import { decodeEvent, type CloudEvent, type Outbox } from '@costgov/bus';
import { events } from '@costgov/contracts';
import type { Queryable } from '@costgov/db';
import type { Logger } from '@costgov/log';
import { publishViolationChange } from '../violations/changes';
import type { Severity, Status } from '../violations/violation';

/**
 * Removes a deleted budget's violations, records the purge (so a late threshold event opens nothing) and
 * reports each removal as `violations.violation.deleted`, from which budgets lowers `violation_count`.
 * Runs inside the inbox transaction: a redelivered `budget.deleted` changes nothing.
 */
export function budgetPurge({ outbox, logger }: { outbox: Outbox; logger: Logger }) {
  return async function purgeDeletedBudget(tx: Queryable, event: CloudEvent): Promise<void> {
    const { budgetId, teamId } = decodeEvent(events.BudgetChangedSchema, event);
    const { rows } = await tx.query<{
      id: string;
      project_id: string;
      severity: Severity;
      status: Status;
    }>(
      'DELETE FROM violations WHERE team_id = $1 AND budget_id = $2 RETURNING id, project_id, severity, status',
      [teamId, budgetId],
    );
    for (const row of rows) {
      await publishViolationChange(
        outbox,
        tx,
        'deleted',
        {
          id: row.id,
          teamId,
          projectId: row.project_id,
          budgetId,
          severity: row.severity,
          status: row.status,
        },
        row.status,
      );
    }
    await tx.query(
      `INSERT INTO budget_purges (budget_id, team_id, event_id, violations_removed) VALUES ($1, $2, $3, $4)
       ON CONFLICT (budget_id) DO NOTHING`,
      [budgetId, teamId, event.id, rows.length],
    );
    logger.info(
      { budget_id: budgetId, team_id: teamId, violations_removed: rows.length },
      'purged deleted budget',
    );
  };
}

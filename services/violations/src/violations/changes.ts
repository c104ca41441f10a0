import { create } from '@bufbuild/protobuf';
import type { Outbox } from '@costgov/bus';
import { events } from '@costgov/contracts';
import type { Queryable } from '@costgov/db';
import type { Violation } from './violation';

export type ViolationChange = 'created' | 'acknowledged' | 'resolved' | 'deleted';

/**
 * Writes `violations.violation.<change>` in the caller's transaction. A deleted violation reports status
 * `deleted` and the status it had, so counters of open violations (budgets' `violation_count`) follow.
 */
export async function publishViolationChange(
  outbox: Outbox,
  tx: Queryable,
  change: ViolationChange,
  violation: Pick<Violation, 'id' | 'teamId' | 'projectId' | 'budgetId' | 'severity' | 'status'>,
  previousStatus: string,
): Promise<void> {
  await outbox.addMessage(tx, {
    type: `violations.violation.${change}`,
    subject: violation.id,
    schema: events.ViolationChangedSchema,
    message: create(events.ViolationChangedSchema, {
      violationId: violation.id,
      teamId: violation.teamId,
      projectId: violation.projectId,
      budgetId: violation.budgetId,
      severity: violation.severity,
      status: change === 'deleted' ? 'deleted' : violation.status,
      previousStatus,
    }),
  });
}

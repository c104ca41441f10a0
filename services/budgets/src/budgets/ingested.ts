import { decodeEvent, type CloudEvent } from '@costgov/bus';
import { events } from '@costgov/contracts';
import type { Queryable } from '@costgov/db';
import type { BudgetEvaluator } from './evaluator';

/** Event types after which the spend of a connection's budgets may have changed. */
export const spendChangingEvents = ['costs.data.ingested', 'costs.connection.deleted'];

/**
 * Re-evaluates the budgets reading the event's connection inside the inbox transaction, so a redelivered
 * event finds its id processed and evaluates nothing twice (and a second evaluation would cross nothing).
 */
export async function evaluateAfterCostChange(
  tx: Queryable,
  event: CloudEvent,
  evaluator: BudgetEvaluator,
): Promise<void> {
  const { connectionId, teamId } =
    event.type === 'costs.data.ingested'
      ? decodeEvent(events.CostDataIngestedSchema, event)
      : decodeEvent(events.ConnectionChangedSchema, event);
  await evaluator.evaluateConnection(tx, teamId, connectionId);
}

import { decodeEvent, type CloudEvent } from '@costgov/bus';
import { events } from '@costgov/contracts';
import type { Queryable } from '@costgov/db';

/** The violation events `violation_count` follows: created, acknowledged, resolved and deleted. */
export const violationEventTypes = ['violations.violation.*'];

/** Open and acknowledged violations count; resolved and deleted ones do not. */
const counts = (status: string) => (status === 'open' || status === 'acknowledged' ? 1 : 0);

/**
 * Keeps a project's `violation_count` (open + acknowledged) from the violations service's events: each
 * event moves the count by what its status change means (created +1, resolved or deleted while counted
 * -1, acknowledged 0). Runs in the inbox transaction, so a redelivered event is not counted twice.
 */
export async function countViolationChange(tx: Queryable, event: CloudEvent): Promise<void> {
  const change = decodeEvent(events.ViolationChangedSchema, event);
  const delta = counts(change.status) - counts(change.previousStatus);
  if (delta === 0) return;
  await tx.query(
    'UPDATE projects SET violation_count = violation_count + $3 WHERE team_id = $1 AND id = $2',
    [change.teamId, change.projectId, delta],
  );
}

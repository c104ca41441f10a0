import { create } from '@bufbuild/protobuf';
import type { Outbox } from '@costgov/bus';
import { events } from '@costgov/contracts';
import type { Queryable } from '@costgov/db';
import type { Finding } from './finding';

export type FindingChange = 'created' | 'updated' | 'resolved';

/** scanner.finding.<change> as the outbox takes it. */
export function findingChangeMessage(change: FindingChange, finding: Finding) {
  return {
    type: `scanner.finding.${change}`,
    subject: finding.id,
    schema: events.FindingChangedSchema,
    message: create(events.FindingChangedSchema, {
      findingId: finding.id,
      teamId: finding.teamId,
      projectId: finding.projectId,
      ruleId: finding.ruleId,
      resourceId: finding.resourceId,
      severity: finding.severity,
      status: finding.status,
      estimatedMonthlySavings: finding.estimatedMonthlySavings ?? undefined,
    }),
  };
}

/** scanner.finding.<change>, written in the transaction that made the change. */
export async function publishFindingChange(
  outbox: Outbox,
  tx: Queryable,
  change: FindingChange,
  finding: Finding,
): Promise<void> {
  await outbox.addMessage(tx, findingChangeMessage(change, finding));
}

/** Many changes in one go (a scan's), in order, a few thousand per statement. */
export async function publishFindingChanges(
  outbox: Outbox,
  tx: Queryable,
  changes: ReadonlyArray<{ change: FindingChange; finding: Finding }>,
): Promise<void> {
  await outbox.addMessages(
    tx,
    changes.map(({ change, finding }) => findingChangeMessage(change, finding)),
  );
}

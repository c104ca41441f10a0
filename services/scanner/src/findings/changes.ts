import { create } from '@bufbuild/protobuf';
import type { Outbox } from '@costgov/bus';
import { events } from '@costgov/contracts';
import type { Queryable } from '@costgov/db';
import type { Finding } from './finding';

export type FindingChange = 'created' | 'updated' | 'resolved';

/**
 * scanner.finding.<change> for each change, written in the transaction that made them, in order, a few
 * thousand per statement (a scan's changes come together).
 */
export async function publishFindingChanges(
  outbox: Outbox,
  tx: Queryable,
  changes: ReadonlyArray<{ change: FindingChange; finding: Finding }>,
): Promise<void> {
  await outbox.addMessages(
    tx,
    changes.map(({ change, finding }) => ({
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
    })),
  );
}

/** One change, as publishFindingChanges writes it. */
export async function publishFindingChange(
  outbox: Outbox,
  tx: Queryable,
  change: FindingChange,
  finding: Finding,
): Promise<void> {
  await publishFindingChanges(outbox, tx, [{ change, finding }]);
}

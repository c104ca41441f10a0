import { decodeEvent, type CloudEvent } from '@costgov/bus';
import { events } from '@costgov/contracts';
import type { Queryable } from '@costgov/db';
import type { Logger } from '@costgov/log';

export const findingsPurgeConsumer = 'scanner_findings_project_deleted';

/**
 * Removes a deleted project's findings (the scans are purged by their own consumer). Runs inside the
 * inbox transaction, so a redelivered `budgets.project.deleted` changes nothing.
 */
export async function purgeProjectFindings(tx: Queryable, event: CloudEvent, logger: Logger): Promise<void> {
  const { projectId, teamId } = decodeEvent(events.ProjectDeletedSchema, event);
  const { rowCount } = await tx.query('DELETE FROM findings WHERE team_id = $1 AND project_id = $2', [
    teamId,
    projectId,
  ]);
  logger.info(
    { project_id: projectId, team_id: teamId, findings_removed: rowCount },
    'purged project findings',
  );
}

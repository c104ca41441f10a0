import { decodeEvent, type CloudEvent } from '@costgov/bus';
import { events } from '@costgov/contracts';
import type { Queryable } from '@costgov/db';
import type { Logger } from '@costgov/log';

/**
 * Removes a deleted project's violations and records the purge. Runs inside the inbox transaction, so a
 * redelivered `project.deleted` finds its event id processed and changes nothing.
 */
export async function purgeDeletedProject(tx: Queryable, event: CloudEvent, logger: Logger): Promise<void> {
  const { projectId, teamId } = decodeEvent(events.ProjectDeletedSchema, event);
  const { rowCount } = await tx.query('DELETE FROM violations WHERE team_id = $1 AND project_id = $2', [
    teamId,
    projectId,
  ]);
  await tx.query(
    `INSERT INTO project_purges (project_id, team_id, event_id, violations_removed) VALUES ($1, $2, $3, $4)
     ON CONFLICT (project_id) DO NOTHING`,
    [projectId, teamId, event.id, rowCount],
  );
  logger.info(
    { project_id: projectId, team_id: teamId, violations_removed: rowCount },
    'purged deleted project',
  );
}

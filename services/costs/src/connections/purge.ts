import { decodeEvent, type CloudEvent } from '@costgov/bus';
import { events } from '@costgov/contracts';
import type { Queryable } from '@costgov/db';
import type { Logger } from '@costgov/log';

/**
 * Removes a deleted connection's cost data: raw records (its partitions, dropped whole), rollups
 * (daily_spend follows by trigger) and finished upload records. Spend stopped counting it when the connection row went (the queries read
 * only existing connections), so this only reclaims storage, away from the DELETE request's deadline
 * however many rows there are. An upload still loading ends on its own (its swap finds no connection).
 * Runs in the inbox transaction; a redelivery finds nothing left to delete.
 */
export async function purgeDeletedConnection(
  tx: Queryable,
  event: CloudEvent,
  logger: Logger,
): Promise<void> {
  const { connectionId, teamId } = decodeEvent(events.ConnectionChangedSchema, event);
  // Only when the connection is really gone: ids are never reused, but a bad event must not purge live data.
  const { rows } = await tx.query('SELECT 1 FROM connections WHERE id = $1', [connectionId]);
  if (rows.length > 0) return;
  const { rows: dropped } = await tx.query<{ partitions: number }>(
    'SELECT cost_records_drop($1, NULL) AS partitions',
    [connectionId],
  );
  const rollups = await tx.query('DELETE FROM daily_costs WHERE connection_id = $1', [connectionId]);
  await tx.query("DELETE FROM cost_uploads WHERE connection_id = $1 AND status <> 'loading'", [connectionId]);
  logger.info(
    {
      connection_id: connectionId,
      team_id: teamId,
      partitions_dropped: Number(dropped[0]!.partitions),
      rollups_removed: rollups.rowCount,
    },
    'purged deleted connection',
  );
}

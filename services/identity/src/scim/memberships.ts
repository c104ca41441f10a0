import { create } from '@bufbuild/protobuf';
import type { Outbox } from '@costgov/bus';
import { events } from '@costgov/contracts';
import type { Queryable } from '@costgov/db';

/**
 * Takes a user out of every group of the team (a user deleted over SCIM): each group changed gets a new
 * version (its ETag changes) and publishes identity.group.updated with its remaining members.
 */
export async function leaveAllGroups(
  tx: Queryable,
  outbox: Outbox,
  { teamId, userId, at }: { teamId: string; userId: string; at: Date },
): Promise<void> {
  const { rows: groups } = await tx.query<{ id: string; display_name: string }>(
    `UPDATE scim_groups g SET version = g.version + 1, updated_at = $3
     FROM scim_group_members m
     WHERE m.group_id = g.id AND m.user_id = $2 AND g.team_id = $1
     RETURNING g.id::text AS id, g.display_name`,
    [teamId, userId, at],
  );
  if (groups.length === 0) return;
  await tx.query('DELETE FROM scim_group_members WHERE user_id = $1', [userId]);
  const { rows: members } = await tx.query<{ group_id: string; user_id: string }>(
    `SELECT group_id::text AS group_id, user_id::text AS user_id FROM scim_group_members
     WHERE group_id = ANY($1::uuid[]) ORDER BY added_at, user_id`,
    [groups.map((g) => g.id)],
  );
  for (const group of groups) {
    await outbox.addMessage(tx, {
      type: 'identity.group.updated',
      subject: group.id,
      schema: events.GroupChangedSchema,
      message: create(events.GroupChangedSchema, {
        groupId: group.id,
        teamId,
        displayName: group.display_name,
        memberIds: members.filter((m) => m.group_id === group.id).map((m) => m.user_id),
      }),
    });
  }
}

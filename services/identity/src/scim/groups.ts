import { create } from '@bufbuild/protobuf';
import type { Outbox } from '@costgov/bus';
import { events } from '@costgov/contracts';
import type { Db, Queryable } from '@costgov/db';
import { ScimError } from './errors';
import { groupFilterAttributes } from './filter';
import { listPage, type ListInput, type ListPage } from './paging';
import { applyGroupPatch, type GroupDoc } from './patch';
import { groupResource, type ResourceMeta } from './render';
import { checkGroup, readGroupResource } from './resources';
import { versionedWrites } from './writes';

interface GroupRow {
  id: string;
  team_id: string;
  display_name: string;
  external_id: string | null;
  version: number;
  created_at: Date;
  updated_at: Date;
}

type StoredGroup = GroupDoc & ResourceMeta;

const uuidShape = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
// Only an id of the right shape is echoed: anything else from the path is not repeated to the client.
const notFound = (id: string) =>
  new ScimError(
    404,
    undefined,
    uuidShape.test(id) ? `Group ${id} not found.` : 'Group not found: not a group id.',
  );
const taken = (name: string) => new ScimError(409, 'uniqueness', `A group named '${name}' already exists.`);
const isUniqueViolation = (error: unknown) => (error as { code?: string }).code === '23505';

/** Member ids as `save` compares them: a set, without regard to case. */
const memberSet = (members: string[]) => new Set(members.map((id) => id.toLowerCase()));

/** True when saving `next` stores what `current` holds: same displayName and externalId, same members. */
export function storesSameGroup(current: GroupDoc, next: GroupDoc): boolean {
  const [before, after] = [memberSet(current.members), memberSet(next.members)];
  return (
    current.displayName === next.displayName &&
    (current.externalId ?? null) === (next.externalId ?? null) &&
    before.size === after.size &&
    [...after].every((id) => before.has(id))
  );
}

/**
 * SCIM groups. A SCIM group is the team's group of that name: its members get the scope and
 * notification policies the team gives the group (ADR in the README: policies live with the group).
 */
export function scimGroupsFactory({
  db,
  outbox,
  newUuid,
  now,
}: {
  db: Db;
  outbox: Outbox;
  newUuid: () => string;
  now: () => Date;
}) {
  async function membersOf(
    tx: Queryable,
    groupIds: string[],
  ): Promise<Map<string, Array<{ id: string; userName: string }>>> {
    const byGroup = new Map<string, Array<{ id: string; userName: string }>>(groupIds.map((id) => [id, []]));
    if (groupIds.length === 0) return byGroup;
    const { rows } = await tx.query<{ group_id: string; id: string; user_name: string }>(
      `SELECT m.group_id::text AS group_id, u.id::text AS id, u.user_name FROM scim_group_members m
       JOIN scim_users u ON u.id = m.user_id WHERE m.group_id = ANY($1::uuid[]) ORDER BY m.added_at, u.id`,
      [groupIds],
    );
    for (const row of rows) byGroup.get(row.group_id)?.push({ id: row.id, userName: row.user_name });
    return byGroup;
  }

  async function find(tx: Queryable, teamId: string, id: string, lock = false): Promise<StoredGroup> {
    if (!uuidShape.test(id)) throw notFound(id);
    const { rows } = await tx.query<GroupRow>(
      `SELECT * FROM scim_groups WHERE team_id = $1 AND id = $2${lock ? ' FOR UPDATE' : ''}`,
      [teamId, id],
    );
    const row = rows[0];
    if (!row) throw notFound(id);
    const members = (await membersOf(tx, [id])).get(id) ?? [];
    return toGroup(
      row,
      members.map((m) => m.id),
    );
  }

  const toGroup = (row: GroupRow, members: string[]): StoredGroup => ({
    id: row.id,
    displayName: row.display_name,
    ...(row.external_id !== null ? { externalId: row.external_id } : {}),
    members,
    version: row.version,
    createdAt: row.created_at,
    updatedAt: row.updated_at,
  });

  /** Members must be users of the same team: an id from elsewhere is refused, never linked. */
  async function checkMembers(tx: Queryable, teamId: string, members: string[]): Promise<void> {
    const malformed = members.find((id) => !uuidShape.test(id));
    if (malformed) throw new ScimError(400, 'invalidValue', `Member '${malformed}' is not a user id.`);
    if (members.length === 0) return;
    const { rows } = await tx.query<{ id: string }>(
      'SELECT id::text AS id FROM scim_users WHERE team_id = $1 AND id = ANY($2::uuid[]) AND deleted_at IS NULL',
      [teamId, members],
    );
    const known = new Set(rows.map((r) => r.id.toLowerCase()));
    const unknown = members.find((id) => !known.has(id.toLowerCase()));
    if (unknown) throw new ScimError(400, 'invalidValue', `Member '${unknown}' is not a user of this team.`);
  }

  async function save(
    tx: Queryable,
    teamId: string,
    id: string,
    next: GroupDoc,
    previous: StoredGroup | undefined,
  ) {
    await checkMembers(tx, teamId, next.members);
    const at = now();
    try {
      const { rows } = previous
        ? await tx.query<GroupRow>(
            `UPDATE scim_groups SET display_name = $3, external_id = $4, version = version + 1, updated_at = $5
             WHERE team_id = $1 AND id = $2 RETURNING *`,
            [teamId, id, next.displayName, next.externalId ?? null, at],
          )
        : await tx.query<GroupRow>(
            `INSERT INTO scim_groups (id, team_id, display_name, external_id, created_at, updated_at)
             VALUES ($1, $2, $3, $4, $5, $5) RETURNING *`,
            [id, teamId, next.displayName, next.externalId ?? null, at],
          );
      const before = new Set(previous?.members ?? []);
      const after = new Set(next.members.map((m) => m.toLowerCase()));
      const removed = [...before].filter((m) => !after.has(m));
      const added = next.members.filter((m) => !before.has(m.toLowerCase()));
      if (removed.length > 0) {
        await tx.query('DELETE FROM scim_group_members WHERE group_id = $1 AND user_id = ANY($2::uuid[])', [
          id,
          removed,
        ]);
      }
      for (const userId of added) {
        await tx.query(
          'INSERT INTO scim_group_members (group_id, user_id, added_at) VALUES ($1, $2, $3) ON CONFLICT DO NOTHING',
          [id, userId, at],
        );
      }
      const group = toGroup(rows[0]!, [...after]);
      await publish(tx, teamId, group, previous ? 'updated' : 'created');
      return group;
    } catch (error) {
      if (isUniqueViolation(error)) throw taken(next.displayName);
      throw error;
    }
  }

  async function publish(
    tx: Queryable,
    teamId: string,
    group: StoredGroup,
    change: 'created' | 'updated' | 'deleted',
  ) {
    await outbox.addMessage(tx, {
      type: `identity.group.${change}`,
      subject: group.id,
      schema: events.GroupChangedSchema,
      message: create(events.GroupChangedSchema, {
        groupId: group.id,
        teamId,
        displayName: group.displayName,
        memberIds: group.members,
      }),
    });
  }

  async function render(group: StoredGroup, baseUrl: string) {
    return groupResource(group, (await membersOf(db, [group.id])).get(group.id) ?? [], baseUrl);
  }

  async function createGroup(teamId: string, body: unknown, baseUrl: string) {
    const doc = readGroupResource(body);
    return render(await db.transaction((tx) => save(tx, teamId, newUuid(), doc, undefined)), baseUrl);
  }

  async function getGroup(teamId: string, id: string, baseUrl: string) {
    return render(await find(db, teamId, id), baseUrl);
  }

  async function listGroups(teamId: string, input: ListInput, baseUrl: string): Promise<ListPage> {
    return listPage(
      db,
      input,
      { table: 'scim_groups', attributes: groupFilterAttributes, teamId },
      async (rows: GroupRow[]) => {
        const members = await membersOf(
          db,
          rows.map((r) => r.id),
        );
        return rows.map((row) => {
          const list = members.get(row.id) ?? [];
          return groupResource(
            toGroup(
              row,
              list.map((m) => m.id),
            ),
            list,
            baseUrl,
          );
        });
      },
    );
  }

  const writes = versionedWrites<GroupDoc, StoredGroup>({
    db,
    kind: 'group',
    find,
    save,
    sameAs: storesSameGroup,
    render,
    read: readGroupResource,
    patch: (current, body) => {
      const next = applyGroupPatch(current, body);
      checkGroup(next);
      return next;
    },
  });

  async function deleteGroup(teamId: string, id: string): Promise<void> {
    await db.transaction(async (tx) => {
      const group = await find(tx, teamId, id, true);
      await tx.query('DELETE FROM scim_groups WHERE team_id = $1 AND id = $2', [teamId, id]);
      await publish(tx, teamId, group, 'deleted');
    });
  }

  return {
    createGroup,
    getGroup,
    listGroups,
    replaceGroup: writes.replace,
    patchGroup: writes.patch,
    deleteGroup,
  };
}

export type ScimGroups = ReturnType<typeof scimGroupsFactory>;

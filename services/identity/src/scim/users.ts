import { create } from '@bufbuild/protobuf';
import { events } from '@costgov/contracts';
import type { Db, Queryable } from '@costgov/db';
import type { Outbox } from '@costgov/runtime';
import { ScimError } from './errors';
import { userFilterAttributes } from './filter';
import { applyUserPatch, type UserDoc } from './patch';
import { userResource, type ResourceMeta } from './render';
import { checkUser, readUserResource } from './resources';
import { versionedWrites } from './writes';
import { listPage, type ListInput, type ListPage } from './paging';

interface UserRow {
  id: string;
  team_id: string;
  user_name: string;
  external_id: string | null;
  given_name: string | null;
  family_name: string | null;
  formatted_name: string | null;
  display_name: string | null;
  emails: UserDoc['emails'];
  active: boolean;
  enterprise: Record<string, unknown>;
  version: number;
  created_at: Date;
  updated_at: Date;
}

export type StoredUser = UserDoc & ResourceMeta;

const definedOnly = <T extends object>(value: T): T =>
  Object.fromEntries(Object.entries(value).filter(([, v]) => v !== null && v !== undefined)) as T;

const toUser = (row: UserRow): StoredUser => ({
  id: row.id,
  userName: row.user_name,
  ...(row.external_id !== null ? { externalId: row.external_id } : {}),
  name: definedOnly({
    givenName: row.given_name,
    familyName: row.family_name,
    formatted: row.formatted_name,
  }) as UserDoc['name'],
  ...(row.display_name !== null ? { displayName: row.display_name } : {}),
  emails: row.emails,
  active: row.active,
  enterprise: row.enterprise,
  version: row.version,
  createdAt: row.created_at,
  updatedAt: row.updated_at,
});

const columns = (user: UserDoc) => [
  user.userName,
  user.externalId ?? null,
  user.name.givenName ?? null,
  user.name.familyName ?? null,
  user.name.formatted ?? null,
  user.displayName ?? null,
  JSON.stringify(user.emails),
  user.active,
  JSON.stringify(user.enterprise),
];

const uuidShape = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const notFound = (id: string) => new ScimError(404, undefined, `User ${id} not found.`);
const taken = (userName: string) =>
  new ScimError(409, 'uniqueness', `A user with userName '${userName}' already exists.`);
const isUniqueViolation = (error: unknown) => (error as { code?: string }).code === '23505';

export function scimUsersFactory({
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
  async function publish(
    tx: Queryable,
    teamId: string,
    user: StoredUser,
    change: 'created' | 'updated' | 'deactivated' | 'reactivated',
  ) {
    await outbox.addMessage(tx, {
      type: `identity.user.${change}`,
      subject: user.id,
      schema: events.UserChangedSchema,
      message: create(events.UserChangedSchema, {
        userId: user.id,
        teamId,
        userName: user.userName,
        active: user.active,
      }),
    });
  }

  async function find(tx: Queryable, teamId: string, id: string, lock = false): Promise<StoredUser> {
    if (!uuidShape.test(id)) throw notFound(id);
    const { rows } = await tx.query<UserRow>(
      `SELECT * FROM scim_users WHERE team_id = $1 AND id = $2${lock ? ' FOR UPDATE' : ''}`,
      [teamId, id],
    );
    if (!rows[0]) throw notFound(id);
    return toUser(rows[0]);
  }

  async function groupsOf(
    userIds: string[],
  ): Promise<Map<string, Array<{ id: string; displayName: string }>>> {
    const byUser = new Map<string, Array<{ id: string; displayName: string }>>(userIds.map((id) => [id, []]));
    if (userIds.length === 0) return byUser;
    const { rows } = await db.query<{ user_id: string; id: string; display_name: string }>(
      `SELECT m.user_id::text AS user_id, g.id::text AS id, g.display_name FROM scim_group_members m
       JOIN scim_groups g ON g.id = m.group_id WHERE m.user_id = ANY($1::uuid[]) ORDER BY g.created_at, g.id`,
      [userIds],
    );
    for (const row of rows) byUser.get(row.user_id)?.push({ id: row.id, displayName: row.display_name });
    return byUser;
  }

  async function render(user: StoredUser, baseUrl: string) {
    return userResource(user, (await groupsOf([user.id])).get(user.id) ?? [], baseUrl);
  }

  /** Writes the new state of a user and publishes what changed; `previous` is undefined on creation. */
  async function save(
    tx: Queryable,
    teamId: string,
    id: string,
    next: UserDoc,
    previous: StoredUser | undefined,
  ): Promise<StoredUser> {
    const at = now();
    try {
      const { rows } = previous
        ? await tx.query<UserRow>(
            `UPDATE scim_users SET user_name = $3, external_id = $4, given_name = $5, family_name = $6,
               formatted_name = $7, display_name = $8, emails = $9, active = $10, enterprise = $11,
               version = version + 1, updated_at = $12
             WHERE team_id = $1 AND id = $2 RETURNING *`,
            [teamId, id, ...columns(next), at],
          )
        : await tx.query<UserRow>(
            `INSERT INTO scim_users (id, team_id, user_name, external_id, given_name, family_name, formatted_name,
               display_name, emails, active, enterprise, role, created_at, updated_at)
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11,
               (SELECT default_role FROM teams WHERE id = $2), $12, $12) RETURNING *`,
            [id, teamId, ...columns(next), at],
          );
      const user = toUser(rows[0]!);
      if (!previous) await publish(tx, teamId, user, 'created');
      else if (previous.active && !user.active) await publish(tx, teamId, user, 'deactivated');
      else if (!previous.active && user.active) await publish(tx, teamId, user, 'reactivated');
      else await publish(tx, teamId, user, 'updated');
      return user;
    } catch (error) {
      if (isUniqueViolation(error)) throw taken(next.userName);
      throw error;
    }
  }

  async function createUser(teamId: string, body: unknown, baseUrl: string) {
    const doc = readUserResource(body);
    const user = await db.transaction((tx) => save(tx, teamId, newUuid(), doc, undefined));
    return render(user, baseUrl);
  }

  async function getUser(teamId: string, id: string, baseUrl: string) {
    return render(await find(db, teamId, id), baseUrl);
  }

  async function listUsers(teamId: string, input: ListInput, baseUrl: string): Promise<ListPage> {
    return listPage(
      db,
      input,
      { table: 'scim_users', attributes: userFilterAttributes, teamId },
      async (rows: UserRow[]) => {
        const users = rows.map(toUser);
        const groups = await groupsOf(users.map((u) => u.id));
        return users.map((user) => userResource(user, groups.get(user.id) ?? [], baseUrl));
      },
    );
  }

  /** PUT resets what the body omits (name, emails empty; active true); PATCH applies a PatchOp. */
  const writes = versionedWrites<UserDoc, StoredUser>({
    db,
    kind: 'user',
    find,
    save,
    render,
    read: readUserResource,
    patch: (current, body) => {
      const next = applyUserPatch(current, body);
      checkUser(next);
      return next;
    },
  });

  async function deleteUser(teamId: string, id: string): Promise<never> {
    await find(db, teamId, id);
    throw new ScimError(
      400,
      undefined,
      'Users are not deleted over SCIM: deactivate them with PATCH {"op": "replace", "path": "active", "value": false}; their data is kept.',
    );
  }

  return {
    createUser,
    getUser,
    listUsers,
    replaceUser: writes.replace,
    patchUser: writes.patch,
    deleteUser,
  };
}

export type ScimUsers = ReturnType<typeof scimUsersFactory>;

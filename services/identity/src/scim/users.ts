import { isDeepStrictEqual } from 'node:util';
import { create } from '@bufbuild/protobuf';
import type { Outbox } from '@costgov/bus';
import { events } from '@costgov/contracts';
import type { Db, Queryable } from '@costgov/db';
import { ScimError } from './errors';
import { userFilterAttributes } from './filter';
import { applyUserPatch, type UserDoc } from './patch';
import { managerIdOf, userResource, type Manager, type ResourceMeta } from './render';
import { checkUser, readUserResource } from './resources';
import { versionedWrites } from './writes';
import { leaveAllGroups } from './memberships';
import { listPage, type ListInput, type ListPage } from './paging';

interface UserRow {
  id: string;
  team_id: string;
  user_name: string;
  external_id: string | null;
  given_name: string | null;
  family_name: string | null;
  formatted_name: string | null;
  middle_name: string | null;
  honorific_prefix: string | null;
  honorific_suffix: string | null;
  display_name: string | null;
  emails: UserDoc['emails'];
  phone_numbers: UserDoc['phoneNumbers'];
  active: boolean;
  enterprise: Record<string, unknown>;
  version: number;
  created_at: Date;
  updated_at: Date;
  deleted_at: Date | null;
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
    middleName: row.middle_name,
    honorificPrefix: row.honorific_prefix,
    honorificSuffix: row.honorific_suffix,
  }) as UserDoc['name'],
  ...(row.display_name !== null ? { displayName: row.display_name } : {}),
  emails: row.emails,
  phoneNumbers: row.phone_numbers,
  active: row.active,
  enterprise: row.enterprise,
  version: row.version,
  createdAt: row.created_at,
  updatedAt: row.updated_at,
});

/** What a user's row holds, in the column order of `save`; `emails`, `phoneNumbers` and `enterprise` are jsonb. */
const stateOf = (user: UserDoc) => [
  user.userName,
  user.externalId ?? null,
  user.name.givenName ?? null,
  user.name.familyName ?? null,
  user.name.formatted ?? null,
  user.name.middleName ?? null,
  user.name.honorificPrefix ?? null,
  user.name.honorificSuffix ?? null,
  user.displayName ?? null,
  user.emails,
  user.phoneNumbers,
  user.active,
  user.enterprise,
];

const isJson = (value: unknown): value is object => typeof value === 'object' && value !== null;

const columns = (user: UserDoc) =>
  stateOf(user).map((value) => (isJson(value) ? JSON.stringify(value) : value));

/**
 * The JSON a jsonb column keeps, read back: undefined properties dropped as JSON.stringify drops them.
 * Compared with isDeepStrictEqual, which ignores key order (jsonb returns keys in its own order).
 */
const storedValue = (value: unknown) =>
  isJson(value) ? (JSON.parse(JSON.stringify(value)) as unknown) : value;

/** True when saving `next` stores what `current` holds; userName compares exactly, as it is stored as sent. */
export const storesSameUser = (current: UserDoc, next: UserDoc): boolean =>
  isDeepStrictEqual(stateOf(current).map(storedValue), stateOf(next).map(storedValue));

const uuidShape = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
// Only an id of the right shape is echoed: anything else from the path is not repeated to the client.
const notFound = (id: string) =>
  new ScimError(
    404,
    undefined,
    uuidShape.test(id) ? `User ${id} not found.` : 'User not found: not a user id.',
  );
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
      `SELECT * FROM scim_users WHERE team_id = $1 AND id = $2 AND deleted_at IS NULL${lock ? ' FOR UPDATE' : ''}`,
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

  /** The team's users named as managers by `users`, for the derived `$ref` and `displayName`. */
  async function managersOf(teamId: string, users: StoredUser[]): Promise<Map<string, Manager>> {
    const ids = [...new Set(users.map(managerIdOf).filter((id): id is string => id !== undefined))];
    const valid = ids.filter((id) => uuidShape.test(id));
    if (valid.length === 0) return new Map();
    const { rows } = await db.query<{ id: string; display_name: string | null }>(
      `SELECT id::text AS id, display_name FROM scim_users
       WHERE team_id = $1 AND id = ANY($2::uuid[]) AND deleted_at IS NULL`,
      [teamId, valid],
    );
    return new Map(rows.map((row) => [row.id, { id: row.id, displayName: row.display_name ?? undefined }]));
  }

  async function renderAll(teamId: string, users: StoredUser[], baseUrl: string) {
    const [groups, managers] = await Promise.all([
      groupsOf(users.map((u) => u.id)),
      managersOf(teamId, users),
    ]);
    return users.map((user) => userResource(user, groups.get(user.id) ?? [], managers, baseUrl));
  }

  async function render(user: StoredUser, baseUrl: string, teamId: string) {
    return (await renderAll(teamId, [user], baseUrl))[0]!;
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
               formatted_name = $7, middle_name = $8, honorific_prefix = $9, honorific_suffix = $10,
               display_name = $11, emails = $12, phone_numbers = $13, active = $14, enterprise = $15,
               version = version + 1, updated_at = $16
             WHERE team_id = $1 AND id = $2 RETURNING *`,
            [teamId, id, ...columns(next), at],
          )
        : await tx.query<UserRow>(
            `INSERT INTO scim_users (id, team_id, user_name, external_id, given_name, family_name, formatted_name,
               middle_name, honorific_prefix, honorific_suffix, display_name, emails, phone_numbers, active,
               enterprise, role, created_at, updated_at)
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15,
               (SELECT default_role FROM teams WHERE id = $2), $16, $16) RETURNING *`,
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
    return render(user, baseUrl, teamId);
  }

  async function getUser(teamId: string, id: string, baseUrl: string) {
    return render(await find(db, teamId, id), baseUrl, teamId);
  }

  async function listUsers(teamId: string, input: ListInput, baseUrl: string): Promise<ListPage> {
    return listPage(
      db,
      input,
      { table: 'scim_users', attributes: userFilterAttributes, teamId, visible: 'deleted_at IS NULL' },
      async (rows: UserRow[]) => {
        return renderAll(teamId, rows.map(toUser), baseUrl);
      },
    );
  }

  /** PUT resets what the body omits (name, emails, phoneNumbers empty; active true); PATCH applies a PatchOp. */
  const writes = versionedWrites<UserDoc, StoredUser>({
    db,
    kind: 'user',
    find,
    save,
    sameAs: storesSameUser,
    render,
    read: readUserResource,
    patch: (current, body) => {
      const next = applyUserPatch(current, body);
      checkUser(next);
      return next;
    },
  });

  /**
   * SCIM DELETE (what Entra sends when a user is deleted for good): the user is deactivated, so access
   * ends at once as with `active` false, and kept, but SCIM no longer sees them: 404 by id, absent from
   * lists and filters, their userName free for a new user. They leave their groups, as Entra expects of a
   * deleted member; each group changed publishes identity.group.updated.
   */
  async function deleteUser(teamId: string, id: string): Promise<void> {
    await db.transaction(async (tx) => {
      const user = await find(tx, teamId, id, true);
      const at = now();
      const { rows } = await tx.query<UserRow>(
        `UPDATE scim_users SET active = false, deleted_at = $3, version = version + 1, updated_at = $3
         WHERE team_id = $1 AND id = $2 RETURNING *`,
        [teamId, id, at],
      );
      // Published even when the user was already inactive: gateways drop whatever they still cache.
      await publish(tx, teamId, toUser(rows[0]!), 'deactivated');
      await leaveAllGroups(tx, outbox, { teamId, userId: user.id, at });
    });
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

import type { Queryable } from '@costgov/db';
import { BadRequestError } from '@costgov/errors';

export const maxUserIdsPerLookup = 100;

// SCIM ids are UUIDs, written lower-case as Postgres prints them; anything else is no id of ours.
const canonicalUuid = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

/**
 * The team's users as other services see them: which ids name a user who can act now. A deactivated
 * user (SCIM `active` false, which a SCIM DELETE also sets) cannot, so it is not found.
 */
export function activeUsersFactory({ db }: { db: Queryable }) {
  /** The ids of `ids` that are active users of the team, in the order given, each once. */
  async function findActiveUsers(teamId: string, ids: string[]): Promise<string[]> {
    if (ids.length > maxUserIdsPerLookup) {
      throw new BadRequestError(`At most ${maxUserIdsPerLookup} user ids can be looked up at once.`);
    }
    const candidates = [...new Set(ids.filter((id) => canonicalUuid.test(id)))];
    if (candidates.length === 0) return [];
    const { rows } = await db.query<{ id: string }>(
      'SELECT id::text AS id FROM scim_users WHERE team_id = $1 AND id = ANY ($2::uuid[]) AND active',
      [teamId, candidates],
    );
    const found = new Set(rows.map((row) => row.id));
    return candidates.filter((id) => found.has(id));
  }

  return { findActiveUsers };
}

export type ActiveUsers = ReturnType<typeof activeUsersFactory>;

import type { Outbox } from '@costgov/bus';
import type { Db } from '@costgov/db';
import { Violations } from '@costgov/errors';
import type { IdGenerator } from '@costgov/ids';
import { authCacheTtlSeconds, scimLimitsOf, type Principal } from '../auth/principal';
import { credentialTable, teamMustExist, type CredentialRow } from './credential-table';
import { displayPrefix, hashSecret, newSecret, scimTokenPrefix } from './secrets';

export interface ScimToken {
  id: string;
  teamId: string;
  name: string;
  prefix: string;
  createdAt: Date;
  lastUsedAt: Date | null;
  revokedAt: Date | null;
}

const toScimToken = (row: CredentialRow): ScimToken => ({
  id: row.id,
  teamId: row.team_id,
  name: row.name,
  prefix: row.prefix,
  createdAt: row.created_at,
  lastUsedAt: row.last_used_at,
  revokedAt: row.revoked_at,
});

/** The scope a SCIM token carries: it opens /scim/v2 and nothing else. */
export const scimScope = 'scim';

export function scimTokensFactory({
  db,
  newId,
  now,
  outbox,
}: {
  db: Db;
  newId: IdGenerator;
  now: () => Date;
  outbox: Outbox;
}) {
  const table = credentialTable<CredentialRow>('scim_tokens', { outbox, now });

  async function createScimToken(
    teamId: string,
    input: { name: string; secret?: string },
  ): Promise<{ token: ScimToken; secret: string }> {
    const name = input.name.trim();
    new Violations()
      .check(name.length >= 1 && name.length <= 100, 'name', 'must be 1 to 100 characters')
      .throwIfAny();
    const secret = input.secret ?? newSecret(scimTokenPrefix);
    const { rows } = await teamMustExist(teamId, () =>
      db.query<CredentialRow>(
        `INSERT INTO scim_tokens (id, team_id, name, secret_hash, prefix) VALUES ($1, $2, $3, $4, $5) RETURNING *`,
        [newId('scimToken'), teamId, name, hashSecret(secret), displayPrefix(secret)],
      ),
    );
    return { token: toScimToken(rows[0]!), secret };
  }

  async function listScimTokens(teamId: string): Promise<ScimToken[]> {
    return (await table.list(db, teamId)).map(toScimToken);
  }

  async function revokeScimToken(teamId: string, id: string): Promise<ScimToken> {
    return toScimToken(await db.transaction((tx) => table.revoke(tx, teamId, id)));
  }

  async function authenticateScimToken(secret: string): Promise<Principal> {
    const row = await table.authenticate(db, secret);
    return {
      teamId: row.team_id,
      credentialId: row.id,
      kind: 'scim_token',
      scopes: [scimScope],
      plan: row.plan,
      limits: scimLimitsOf(row),
      cacheTtlSeconds: authCacheTtlSeconds,
    };
  }

  return { createScimToken, listScimTokens, revokeScimToken, authenticateScimToken };
}

export type ScimTokens = ReturnType<typeof scimTokensFactory>;

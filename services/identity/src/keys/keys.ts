import type { Outbox } from '@costgov/bus';
import type { Db, Queryable } from '@costgov/db';
import { Violations } from '@costgov/errors';
import type { IdGenerator } from '@costgov/ids';
import { apiLimitsOf, authCacheTtlSeconds, type Principal } from '../auth/principal';
import { credentialTable, teamMustExist, type CredentialRow } from './credential-table';
import { apiKeyPrefix, displayPrefix, hashSecret, newSecret } from './secrets';

export const scopes = ['guard:read', 'guard:write', 'scans:write'] as const;
export type Scope = (typeof scopes)[number];

export interface ApiKey {
  id: string;
  teamId: string;
  name: string;
  scopes: string[];
  prefix: string;
  createdAt: Date;
  expiresAt: Date | null;
  lastUsedAt: Date | null;
  revokedAt: Date | null;
}

interface ApiKeyRow extends CredentialRow {
  scopes: string[];
  expires_at: Date | null;
}

const toApiKey = (row: ApiKeyRow): ApiKey => ({
  id: row.id,
  teamId: row.team_id,
  name: row.name,
  scopes: row.scopes,
  prefix: row.prefix,
  createdAt: row.created_at,
  expiresAt: row.expires_at,
  lastUsedAt: row.last_used_at,
  revokedAt: row.revoked_at,
});

export interface CreateApiKeyInput {
  name: string;
  scopes: string[];
  expiresAt?: Date;
  /** A secret chosen by the operator (bootstrap); otherwise one is generated. */
  secret?: string;
}

export function apiKeysFactory({
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
  const table = credentialTable<ApiKeyRow>('api_keys', { outbox, now });

  async function createApiKey(
    teamId: string,
    input: CreateApiKeyInput,
    tx: Queryable = db,
  ): Promise<{ key: ApiKey; secret: string }> {
    const name = input.name.trim();
    const violations = new Violations()
      .check(name.length >= 1 && name.length <= 100, 'name', 'must be 1 to 100 characters')
      .check(input.scopes.length > 0, 'scopes', 'must name at least one scope');
    for (const scope of input.scopes) {
      violations.check((scopes as readonly string[]).includes(scope), 'scopes', `unknown scope '${scope}'`);
    }
    if (input.expiresAt) violations.check(input.expiresAt > now(), 'expires_at', 'must be in the future');
    if (input.secret !== undefined) {
      violations.check(input.secret.length >= 24, 'secret', 'must be at least 24 characters');
    }
    violations.throwIfAny();

    const secret = input.secret ?? newSecret(apiKeyPrefix);
    const { rows } = await teamMustExist(teamId, () =>
      tx.query<ApiKeyRow>(
        `INSERT INTO api_keys (id, team_id, name, scopes, secret_hash, prefix, expires_at)
       VALUES ($1, $2, $3, $4, $5, $6, $7) RETURNING *`,
        [
          newId('apiKey'),
          teamId,
          name,
          [...new Set(input.scopes)],
          hashSecret(secret),
          displayPrefix(secret),
          input.expiresAt ?? null,
        ],
      ),
    );
    return { key: toApiKey(rows[0]!), secret };
  }

  async function listApiKeys(teamId: string): Promise<ApiKey[]> {
    return (await table.list(db, teamId)).map(toApiKey);
  }

  async function revokeApiKey(teamId: string, id: string): Promise<ApiKey> {
    return toApiKey(await db.transaction((tx) => table.revoke(tx, teamId, id)));
  }

  /** Resolves an API key secret to its principal; anything not a live key is UnauthenticatedError. */
  async function authenticateApiKey(secret: string): Promise<Principal> {
    const row = await table.authenticate(db, secret);
    return {
      teamId: row.team_id,
      credentialId: row.id,
      kind: 'api_key',
      scopes: row.scopes,
      plan: row.plan,
      limits: apiLimitsOf(row),
      cacheTtlSeconds: authCacheTtlSeconds,
    };
  }

  return { createApiKey, listApiKeys, revokeApiKey, authenticateApiKey };
}

export type ApiKeys = ReturnType<typeof apiKeysFactory>;

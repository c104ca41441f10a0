import type { Queryable } from '@costgov/db';
import { NotFoundError, UnauthenticatedError, Violations } from '@costgov/errors';
import type { IdGenerator } from '@costgov/ids';
import { displayPrefix, hashSecret, newApiKeySecret, sameHash } from './secrets';

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

interface ApiKeyRow {
  id: string;
  team_id: string;
  name: string;
  scopes: string[];
  secret_hash: string;
  prefix: string;
  created_at: Date;
  expires_at: Date | null;
  last_used_at: Date | null;
  revoked_at: Date | null;
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

export interface Principal {
  teamId: string;
  credentialId: string;
  kind: 'api_key';
  scopes: string[];
  plan: string;
}

/** last_used_at is written at most this often per key, so authentication is not a write per request. */
const lastUsedResolutionMs = 60_000;

export function apiKeysFactory({ db, newId, now }: { db: Queryable; newId: IdGenerator; now: () => Date }) {
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
    if (input.secret !== undefined)
      violations.check(input.secret.length >= 24, 'secret', 'must be at least 24 characters');
    violations.throwIfAny();

    const secret = input.secret ?? newApiKeySecret();
    const { rows } = await tx.query<ApiKeyRow>(
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
    );
    return { key: toApiKey(rows[0]!), secret };
  }

  async function listApiKeys(teamId: string): Promise<ApiKey[]> {
    const { rows } = await db.query<ApiKeyRow>(
      'SELECT * FROM api_keys WHERE team_id = $1 ORDER BY created_at, id',
      [teamId],
    );
    return rows.map(toApiKey);
  }

  async function revokeApiKey(teamId: string, id: string): Promise<ApiKey> {
    const { rows } = await db.query<ApiKeyRow>(
      'UPDATE api_keys SET revoked_at = coalesce(revoked_at, $3) WHERE team_id = $1 AND id = $2 RETURNING *',
      [teamId, id, now()],
    );
    if (!rows[0]) throw new NotFoundError('API key', id);
    return toApiKey(rows[0]);
  }

  /** Resolves an API key secret to its principal; anything not a live key is UnauthenticatedError. */
  async function authenticateApiKey(secret: string): Promise<Principal> {
    const hash = hashSecret(secret);
    const { rows } = await db.query<ApiKeyRow & { plan: string }>(
      `SELECT k.*, t.plan FROM api_keys k JOIN teams t ON t.id = k.team_id WHERE k.secret_hash = $1`,
      [hash],
    );
    const row = rows[0];
    const at = now();
    if (
      !row ||
      !sameHash(row.secret_hash, hash) ||
      row.revoked_at ||
      (row.expires_at && row.expires_at <= at)
    ) {
      throw new UnauthenticatedError();
    }
    if (!row.last_used_at || at.getTime() - row.last_used_at.getTime() > lastUsedResolutionMs) {
      await db.query('UPDATE api_keys SET last_used_at = $2 WHERE id = $1', [row.id, at]);
    }
    return { teamId: row.team_id, credentialId: row.id, kind: 'api_key', scopes: row.scopes, plan: row.plan };
  }

  return { createApiKey, listApiKeys, revokeApiKey, authenticateApiKey };
}

export type ApiKeys = ReturnType<typeof apiKeysFactory>;

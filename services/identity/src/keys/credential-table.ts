import { create } from '@bufbuild/protobuf';
import type { Outbox } from '@costgov/bus';
import { events } from '@costgov/contracts';
import type { Queryable } from '@costgov/db';
import { NotFoundError, UnauthenticatedError } from '@costgov/errors';
import type { TeamLimitColumns } from '../auth/principal';
import { hashSecret, sameHash } from './secrets';

/** What API keys and SCIM tokens share: a hashed secret, revocation, last-used time. */
export interface CredentialRow {
  id: string;
  team_id: string;
  name: string;
  secret_hash: string;
  prefix: string;
  created_at: Date;
  last_used_at: Date | null;
  revoked_at: Date | null;
  expires_at?: Date | null;
}

type Table = 'api_keys' | 'scim_tokens';
const kindOf: Record<Table, string> = { api_keys: 'api_key', scim_tokens: 'scim_token' };
const resourceOf: Record<Table, string> = { api_keys: 'API key', scim_tokens: 'SCIM token' };

/** last_used_at is written at most this often per credential, so authentication is not a write per request. */
const lastUsedResolutionMs = 60_000;

export function credentialTable<Row extends CredentialRow>(
  table: Table,
  deps: { outbox: Outbox; now: () => Date },
) {
  /** Revokes and publishes identity.key.revoked in the same transaction, so every gateway hears of it. */
  async function revoke(tx: Queryable, teamId: string, id: string): Promise<Row> {
    const { rows } = await tx.query<Row & { was_revoked: Date | null }>(
      `UPDATE ${table} t SET revoked_at = coalesce(t.revoked_at, $3)
       FROM (SELECT revoked_at AS was_revoked FROM ${table} WHERE team_id = $1 AND id = $2) before
       WHERE t.team_id = $1 AND t.id = $2 RETURNING t.*, before.was_revoked`,
      [teamId, id, deps.now()],
    );
    const row = rows[0];
    if (!row) throw new NotFoundError(resourceOf[table], id);
    if (!row.was_revoked) {
      await deps.outbox.addMessage(tx, {
        type: 'identity.key.revoked',
        subject: id,
        schema: events.CredentialRevokedSchema,
        message: create(events.CredentialRevokedSchema, { credentialId: id, teamId, kind: kindOf[table] }),
      });
    }
    return row;
  }

  /** The live credential with this secret and its team, or UnauthenticatedError. */
  async function authenticate(db: Queryable, secret: string): Promise<Row & TeamLimitColumns> {
    const hash = hashSecret(secret);
    const { rows } = await db.query<Row & TeamLimitColumns>(
      `SELECT c.*, t.plan, t.api_requests_per_minute, t.api_concurrent_requests, t.scim_requests_per_minute,
         t.scim_concurrent_requests
       FROM ${table} c JOIN teams t ON t.id = c.team_id WHERE c.secret_hash = $1`,
      [hash],
    );
    const row = rows[0];
    const at = deps.now();
    // The lookup is by hash; comparing the stored hash again in constant time keeps timing out of it.
    if (
      !row ||
      !sameHash(row.secret_hash, hash) ||
      row.revoked_at ||
      (row.expires_at && row.expires_at <= at)
    ) {
      throw new UnauthenticatedError();
    }
    if (!row.last_used_at || at.getTime() - row.last_used_at.getTime() > lastUsedResolutionMs) {
      await db.query(`UPDATE ${table} SET last_used_at = $2 WHERE id = $1`, [row.id, at]);
    }
    return row;
  }

  async function list(db: Queryable, teamId: string): Promise<Row[]> {
    const { rows } = await db.query<Row>(
      `SELECT * FROM ${table} WHERE team_id = $1 ORDER BY created_at, id`,
      [teamId],
    );
    return rows;
  }

  return { revoke, authenticate, list };
}

/** Runs an insert of a team's credential; a team that does not exist is NotFoundError, not a database error. */
export async function teamMustExist<T>(teamId: string, insert: () => Promise<T>): Promise<T> {
  try {
    return await insert();
  } catch (error) {
    if ((error as { code?: string }).code === '23503') throw new NotFoundError('Team', teamId);
    throw error;
  }
}

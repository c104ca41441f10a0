import {
  create,
  fromBinary,
  toBinary,
  type DescMessage,
  type MessageInitShape,
  type MessageShape,
} from '@bufbuild/protobuf';
import type { Db, Migration, Queryable } from '@costgov/db';
import { DomainError, UnavailableError } from '@costgov/errors';
import type { CallContext } from '@costgov/rpc';

/**
 * Idempotency-Key, made exactly once by the service that owns the effect (docs/decisions.md). The
 * gateway sends the key (hashed) and the request's fingerprint with the call; the service records them in
 * the transaction of the effect, with its answer. A retry after any crash (gateway, service, Redis) finds
 * the record and gets that answer back, never a second effect. The gateway's Redis record is a cache in
 * front of this, and the reason a retry while the first call runs is 409 there.
 */
export const idempotencyMigration: Migration = {
  name: '0000_idempotency',
  sql: `
    CREATE TABLE idempotency_keys (
      team_id text NOT NULL,
      operation text NOT NULL,
      key text NOT NULL,
      fingerprint text NOT NULL,
      -- What an attempt reserved before an effect outside this database (a scan's id, charged in
      -- identity), so that a retry after a crash between the steps finishes that attempt.
      reference text,
      -- The answer (the RPC's response message, binary), once the effect is committed.
      response bytea,
      created_at timestamptz NOT NULL,
      PRIMARY KEY (team_id, operation, key)
    );
    CREATE INDEX idempotency_keys_created_at ON idempotency_keys (created_at);
  `,
};

/** How long a key is kept: the gateway's IDEMPOTENCY_TTL_MS (24 h). */
export const defaultIdempotencyTtlMs = 24 * 60 * 60 * 1000;

/** The answer to a retry that carries the key of another request (422 at the gateway). */
export class IdempotencyKeyReusedError extends DomainError {
  constructor() {
    super(
      'validation_error',
      'This Idempotency-Key was used for a different request (method, path or body); use a new key.',
      [{ field: 'Idempotency-Key', message: 'was used with a different request' }],
      { apiCode: 'idempotency_key_reused' },
    );
  }
}

/** The key is recorded by a concurrent attempt that committed first: its answer is the one to give. */
class KeyTaken extends Error {}

/**
 * What an operation does with the caller's key inside its own transactions. Domain code calls `record` in
 * the transaction of its effect; an operation with an effect outside its database (a charge in another
 * service) first `reserve`s the reference it will use, and a retry finds it in `reserved`.
 */
export interface KeyedEffect<T> {
  /** The reference an earlier attempt with this key reserved and did not finish (it crashed between steps). */
  readonly reserved: string | undefined;
  /** Keeps `reference` for the key, in `tx`, before an effect that lies outside this database. */
  reserve(tx: Queryable, reference: string): Promise<void>;
  /** Keeps `result` as the key's answer, in the transaction of the effect. */
  record(tx: Queryable, result: T): Promise<void>;
  /** Forgets this attempt's reservation (it was refused before any effect), so a retry starts afresh. */
  forget(tx: Queryable): Promise<void>;
}

interface StoredKey {
  fingerprint: string;
  reference: string | null;
  response: Uint8Array | null;
}

export interface IdempotentCallsOptions {
  db: Db;
  now: () => Date;
  ttlMs?: number;
}

/**
 * `once(ctx, operation, schema, toMessage, run)`: runs `run` with a KeyedEffect when the call carries an
 * Idempotency-Key, else without one. A key already answered returns that answer (the same message, and
 * `ctx.replayed`); a key used with another fingerprint is IdempotencyKeyReusedError. When `run` fails and
 * a concurrent attempt with the same key committed meanwhile (a retry racing its first attempt), the
 * answer is that attempt's, not the failure (e.g. the name conflict the first attempt's project causes).
 */
export function idempotentCalls({ db, now, ttlMs = defaultIdempotencyTtlMs }: IdempotentCallsOptions) {
  const expiredBefore = () => new Date(now().getTime() - ttlMs);

  async function lookup(q: Queryable, teamId: string, operation: string, key: string) {
    const { rows } = await q.query<StoredKey>(
      `SELECT fingerprint, reference, response FROM idempotency_keys
       WHERE team_id = $1 AND operation = $2 AND key = $3 AND created_at > $4`,
      [teamId, operation, key, expiredBefore()],
    );
    return rows[0];
  }

  /**
   * Writes the key's row: new, or over an expired one, or completing this attempt's own reservation.
   * A row of a concurrent attempt makes this wait for it (the primary key), then throw KeyTaken.
   */
  async function write(
    tx: Queryable,
    row: { teamId: string; operation: string; key: string; fingerprint: string },
    reference: string | null,
    response: Uint8Array | null,
  ): Promise<void> {
    const { rows } = await tx.query(
      `INSERT INTO idempotency_keys AS k (team_id, operation, key, fingerprint, reference, response, created_at)
       VALUES ($1, $2, $3, $4, $5, $6, $7)
       ON CONFLICT (team_id, operation, key) DO UPDATE
         SET fingerprint = EXCLUDED.fingerprint, reference = EXCLUDED.reference,
           response = EXCLUDED.response, created_at = EXCLUDED.created_at
         WHERE k.created_at <= $8
           OR (k.response IS NULL AND k.fingerprint = EXCLUDED.fingerprint AND k.reference = EXCLUDED.reference)
       RETURNING 1`,
      [row.teamId, row.operation, row.key, row.fingerprint, reference, response, now(), expiredBefore()],
    );
    if (rows.length === 0) throw new KeyTaken();
  }

  return async function once<T, S extends DescMessage>(
    ctx: CallContext,
    operation: string,
    schema: S,
    toMessage: (result: T) => MessageInitShape<S>,
    run: (effect: KeyedEffect<T> | undefined) => Promise<T>,
  ): Promise<MessageInitShape<S>> {
    const { teamId, idempotencyKey: key, idempotencyFingerprint: fingerprint } = ctx;
    if (!teamId || !key || !fingerprint) return toMessage(await run(undefined));
    const row = { teamId, operation, key, fingerprint };

    /** The recorded answer, or the reference of an unfinished attempt (undefined: nothing is recorded). */
    type Recorded = { answer: MessageShape<S> } | { reserved: string | undefined } | undefined;
    const recorded = async (q: Queryable): Promise<Recorded> => {
      const stored = await lookup(q, teamId, operation, key);
      if (!stored) return undefined;
      if (stored.fingerprint !== fingerprint) throw new IdempotencyKeyReusedError();
      if (stored.response) return { answer: fromBinary(schema, stored.response) as MessageShape<S> };
      return { reserved: stored.reference ?? undefined };
    };

    let found = await recorded(db);
    // A reservation another attempt holds may be finished by this one (or that one): at most a few rounds.
    for (let round = 0; ; round++) {
      if (found && 'answer' in found) {
        ctx.replayed = true;
        return found.answer;
      }
      let reference = found?.reserved;
      const effect: KeyedEffect<T> = {
        reserved: reference,
        async reserve(tx, ref) {
          await write(tx, row, ref, null);
          reference = ref;
        },
        async record(tx, result) {
          await write(tx, row, reference ?? null, toBinary(schema, create(schema, toMessage(result))));
        },
        async forget(tx) {
          if (reference === undefined) return;
          await tx.query(
            `DELETE FROM idempotency_keys
             WHERE team_id = $1 AND operation = $2 AND key = $3 AND reference = $4 AND response IS NULL`,
            [teamId, operation, key, reference],
          );
        },
      };
      try {
        return toMessage(await run(effect));
      } catch (error) {
        // The attempt that got there first decides the answer; with nothing recorded, this failure does.
        let latest: Recorded;
        try {
          latest = await recorded(db);
        } catch (lookupError) {
          if (lookupError instanceof IdempotencyKeyReusedError) throw lookupError;
          throw error;
        }
        const anotherAttempt =
          latest && ('answer' in latest || (latest.reserved !== undefined && latest.reserved !== reference));
        if (!anotherAttempt || round >= 2) {
          if (error instanceof KeyTaken)
            throw new UnavailableError('A request with this Idempotency-Key is being processed; retry.');
          throw error;
        }
        found = latest;
      }
    }
  };
}

export type IdempotentCalls = ReturnType<typeof idempotentCalls>;

/** Deletes keys older than the TTL (with their answers); run now and then by every service. */
export async function purgeIdempotencyKeys(
  db: Db,
  now: Date,
  ttlMs = defaultIdempotencyTtlMs,
): Promise<number> {
  const { rowCount } = await db.query('DELETE FROM idempotency_keys WHERE created_at <= $1', [
    new Date(now.getTime() - ttlMs),
  ]);
  return rowCount;
}

/** Forgets a reservation an attempt abandoned (a sweeper gave its charge back), so a retry starts afresh. */
export async function forgetReservation(
  tx: Queryable,
  teamId: string,
  operation: string,
  reference: string,
): Promise<void> {
  await tx.query(
    `DELETE FROM idempotency_keys
     WHERE team_id = $1 AND operation = $2 AND reference = $3 AND response IS NULL`,
    [teamId, operation, reference],
  );
}

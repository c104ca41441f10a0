import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { costs } from '@costgov/contracts';
import { migrate, type Db, type Queryable } from '@costgov/db';
import { ConflictError, UnavailableError } from '@costgov/errors';
import type { CallContext } from '@costgov/rpc';
import { freshDb } from '@costgov/testing';
import {
  forgetReservation,
  idempotencyMigration,
  idempotentCalls,
  IdempotencyKeyReusedError,
  purgeIdempotencyKeys,
  type IdempotentCalls,
  type KeyedEffect,
} from '../src/idempotency';

/** A connection-like effect: a row with a unique name, as createConnection makes one. */
interface Made {
  id: string;
  name: string;
}

let db: Db;
let clock = new Date('2026-11-27T12:00:00Z');
let once: IdempotentCalls;
let made = 0;

beforeAll(async () => {
  db = await freshDb('idem');
  await migrate(db, [
    idempotencyMigration,
    { name: '0001_made', sql: 'CREATE TABLE made (id text PRIMARY KEY, name text UNIQUE NOT NULL)' },
    { name: '0002_reserved', sql: 'CREATE TABLE reserved (ref text PRIMARY KEY)' },
  ]);
  once = idempotentCalls({ db, now: () => clock, ttlMs: 60 * 60 * 1000 });
});
afterAll(() => db.close());
beforeEach(async () => {
  clock = new Date('2026-11-27T12:00:00Z');
  await db.exec('DELETE FROM made; DELETE FROM reserved; DELETE FROM idempotency_keys');
});

const keyed = (key: string, fingerprint = 'fp-1'): CallContext => ({
  teamId: 'team_1',
  idempotencyKey: key,
  idempotencyFingerprint: fingerprint,
});

const toMessage = (m: Made) => ({ id: m.id, name: m.name, provider: 'aws' });

/** Makes one row named `name` and records the answer in the same transaction. */
function make(name: string, hooks: { afterRecord?: (tx: Queryable) => Promise<void> } = {}) {
  return (effect: KeyedEffect<Made> | undefined) =>
    db.transaction(async (tx) => {
      const result = { id: `con_${++made}`, name };
      try {
        await tx.query('INSERT INTO made (id, name) VALUES ($1, $2)', [result.id, name]);
      } catch (error) {
        if ((error as { code?: string }).code === '23505') throw new ConflictError(`'${name}' exists`);
        throw error;
      }
      await effect?.record(tx, result);
      await hooks.afterRecord?.(tx);
      return result;
    });
}

const rows = async () => (await db.query<{ n: number }>('SELECT count(*)::int AS n FROM made')).rows[0]!.n;

describe('a call without a key', () => {
  it('runs every time and is never marked replayed', async () => {
    const ctx: CallContext = { teamId: 'team_1' };
    await once(ctx, 'create', costs.ConnectionSchema, toMessage, make('a'));
    await expect(once(ctx, 'create', costs.ConnectionSchema, toMessage, make('a'))).rejects.toThrow(
      ConflictError,
    );
    expect(ctx.replayed).toBeUndefined();
    expect(await rows()).toBe(1);
  });
});

describe('a call with a key', () => {
  it('acts once; a retry gets the first answer, marked replayed, and changes nothing', async () => {
    const first = keyed('k1');
    const answer = await once(first, 'create', costs.ConnectionSchema, toMessage, make('a'));
    expect(first.replayed).toBeUndefined();
    const retry = keyed('k1');
    const again = await once(retry, 'create', costs.ConnectionSchema, toMessage, make('a'));
    expect(retry.replayed).toBe(true);
    expect(again).toMatchObject({ id: answer.id, name: 'a', provider: 'aws' });
    expect(await rows()).toBe(1);
  });

  it('refuses the key with another fingerprint, and acts for another key, team or operation', async () => {
    await once(keyed('k1'), 'create', costs.ConnectionSchema, toMessage, make('a'));
    await expect(
      once(keyed('k1', 'fp-other'), 'create', costs.ConnectionSchema, toMessage, make('b')),
    ).rejects.toThrow(IdempotencyKeyReusedError);
    await once(keyed('k2'), 'create', costs.ConnectionSchema, toMessage, make('c'));
    await once({ ...keyed('k1'), teamId: 'team_2' }, 'create', costs.ConnectionSchema, toMessage, make('d'));
    await once(keyed('k1'), 'rename', costs.ConnectionSchema, toMessage, make('e'));
    expect(await rows()).toBe(4);
  });

  it('keeps nothing of an effect that rolled back: the retry acts', async () => {
    const crash = make('a', {
      afterRecord: async () => {
        throw new UnavailableError('the process died before the commit');
      },
    });
    await expect(once(keyed('k1'), 'create', costs.ConnectionSchema, toMessage, crash)).rejects.toThrow(
      UnavailableError,
    );
    expect(await rows()).toBe(0);
    const retry = keyed('k1');
    expect(await once(retry, 'create', costs.ConnectionSchema, toMessage, make('a'))).toMatchObject({
      name: 'a',
    });
    expect(retry.replayed).toBeUndefined();
    expect(await rows()).toBe(1);
  });

  it('acts again once the key has expired, and purges expired keys', async () => {
    await once(keyed('k1'), 'create', costs.ConnectionSchema, toMessage, make('a'));
    clock = new Date(clock.getTime() + 60 * 60 * 1000 + 1);
    const late = keyed('k1', 'fp-other'); // an expired key is free for any request
    await once(late, 'create', costs.ConnectionSchema, toMessage, make('b'));
    expect(late.replayed).toBeUndefined();
    expect(await rows()).toBe(2);
    clock = new Date(clock.getTime() + 60 * 60 * 1000 + 1);
    expect(await purgeIdempotencyKeys(db, clock, 60 * 60 * 1000)).toBe(1);
  });

  it('answers a retry racing its first attempt with the first answer, not the conflict it meets', async () => {
    const answers = await Promise.allSettled(
      Array.from({ length: 4 }, () =>
        once(keyed('k1'), 'create', costs.ConnectionSchema, toMessage, make('a')),
      ),
    );
    expect(answers.map((a) => a.status)).toEqual(['fulfilled', 'fulfilled', 'fulfilled', 'fulfilled']);
    const ids = answers.map((a) => (a as PromiseFulfilledResult<{ id?: string }>).value.id);
    expect(new Set(ids).size).toBe(1);
    expect(await rows()).toBe(1);
  });
});

describe('attempts with one key at the same time', () => {
  it('keeps one effect when nothing else would refuse the second (the key alone decides)', async () => {
    let n = 0;
    const anyName = (effect: KeyedEffect<Made> | undefined) => make(`free-${++n}`)(effect);
    const answers = await Promise.all(
      Array.from({ length: 4 }, () =>
        once(keyed('k1'), 'create', costs.ConnectionSchema, toMessage, anyName),
      ),
    );
    expect(new Set(answers.map((a) => a.id)).size).toBe(1);
    expect(await rows()).toBe(1);
  });
});

describe('an effect in two steps (a reservation, then the effect)', () => {
  /** Reserves a reference, makes an outside effect keyed by it (`outside`), then records. */
  function twoSteps(name: string, outside: (ref: string) => Promise<void>) {
    return async (effect: KeyedEffect<Made> | undefined) => {
      const ref = effect?.reserved ?? `ref_${++made}`;
      if (!effect?.reserved) {
        await db.transaction(async (tx) => {
          await tx.query('INSERT INTO reserved (ref) VALUES ($1)', [ref]);
          await effect?.reserve(tx, ref);
        });
      }
      await outside(ref);
      return db.transaction(async (tx) => {
        await tx.query('INSERT INTO made (id, name) VALUES ($1, $2) ON CONFLICT (id) DO NOTHING', [
          ref,
          name,
        ]);
        const result = { id: ref, name };
        await effect?.record(tx, result);
        return result;
      });
    };
  }

  it('finishes with the reserved reference after a crash between the steps', async () => {
    const charged: string[] = [];
    await expect(
      once(
        keyed('k1'),
        'scan',
        costs.ConnectionSchema,
        toMessage,
        twoSteps('a', async (ref) => {
          charged.push(ref);
          throw new UnavailableError('died after the charge');
        }),
      ),
    ).rejects.toThrow(UnavailableError);
    const retry = keyed('k1');
    const answer = await once(
      retry,
      'scan',
      costs.ConnectionSchema,
      toMessage,
      twoSteps('a', async (ref) => void charged.push(ref)),
    );
    expect(charged).toEqual([answer.id, answer.id]); // the outside effect is keyed by the one reference
    expect(await rows()).toBe(1);
    expect(retry.replayed).toBeUndefined(); // finished now, not replayed
    const third = keyed('k1');
    expect(
      await once(
        third,
        'scan',
        costs.ConnectionSchema,
        toMessage,
        twoSteps('a', async () => {}),
      ),
    ).toMatchObject({
      id: answer.id,
    });
    expect(third.replayed).toBe(true);
  });

  it('lets a retry finish the reservation of an attempt still running; both get one answer', async () => {
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    let reserved!: () => void;
    const hasReserved = new Promise<void>((resolve) => (reserved = resolve));
    const outside: string[] = [];
    const slow = once(
      keyed('k1'),
      'scan',
      costs.ConnectionSchema,
      toMessage,
      twoSteps('a', async (ref) => {
        reserved();
        await held;
        outside.push(ref);
      }),
    );
    await hasReserved;
    const retry = keyed('k1');
    const fast = await once(
      retry,
      'scan',
      costs.ConnectionSchema,
      toMessage,
      twoSteps('a', async (ref) => void outside.push(ref)),
    );
    release();
    const late = await slow;
    expect(late.id).toBe(fast.id);
    expect(outside).toEqual([fast.id, fast.id]); // one reference for both attempts' outside step
    expect(await rows()).toBe(1);
  });

  it('starts afresh once the reservation is forgotten (its charge given back)', async () => {
    let firstRef = '';
    await expect(
      once(
        keyed('k1'),
        'scan',
        costs.ConnectionSchema,
        toMessage,
        twoSteps('a', async (ref) => {
          firstRef = ref;
          throw new UnavailableError('died');
        }),
      ),
    ).rejects.toThrow(UnavailableError);
    await db.transaction((tx) => forgetReservation(tx, 'team_1', 'scan', firstRef));
    const answer = await once(
      keyed('k1'),
      'scan',
      costs.ConnectionSchema,
      toMessage,
      twoSteps('a', async () => {}),
    );
    expect(answer.id).not.toBe(firstRef);
  });

  it('forgets a reservation refused before any effect, so the retry acts', async () => {
    const refused = async (effect: KeyedEffect<Made> | undefined) => {
      await db.transaction((tx) => effect!.reserve(tx, 'ref_refused'));
      await db.transaction((tx) => effect!.forget(tx));
      throw new ConflictError('not enough credits');
    };
    await expect(once(keyed('k1'), 'scan', costs.ConnectionSchema, toMessage, refused)).rejects.toThrow(
      ConflictError,
    );
    const answer = await once(
      keyed('k1'),
      'scan',
      costs.ConnectionSchema,
      toMessage,
      twoSteps('a', async () => {}),
    );
    expect(answer.id).not.toBe('ref_refused');
  });
});

import { afterEach, describe, expect, it } from 'vitest';
import { uniqueName } from '@costgov/testing';
import type { IdempotencyStore, IdempotencyStoreOptions, StoredResponse } from '../src/store';

/** The behaviour every idempotency store shares, run against each implementation by its test file. */
export function describeIdempotencyStoreContract(setup: {
  open(options: Required<IdempotencyStoreOptions>): Promise<IdempotencyStore>;
  /** Lets `ms` pass for the store (a fake clock, or real time for Redis). */
  wait(ms: number): Promise<void>;
  /** TTLs long enough for a round trip on a loaded machine, short enough to wait out. */
  ttlMs: number;
  lockTtlMs: number;
}) {
  const response: StoredResponse = {
    status: 201,
    headers: { 'content-type': 'application/json; charset=utf-8', location: '/v1/guard/projects/prj_1' },
    bodyBase64: Buffer.from('{"data":{"id":"prj_1"}}').toString('base64'),
  };
  const opened: IdempotencyStore[] = [];
  const open = async () => {
    const store = await setup.open({ ttlMs: setup.ttlMs, lockTtlMs: setup.lockTtlMs });
    opened.push(store);
    return store;
  };
  afterEach(async () => {
    await Promise.all(opened.splice(0).map((store) => store.close()));
  });

  describe('idempotency store contract', () => {
    it('locks a free key for the first request and tells a second one it is running', async () => {
      const store = await open();
      const key = uniqueName('key');
      expect((await store.claim(key, 'fp-a')).state).toBe('claimed');
      expect(await store.claim(key, 'fp-b')).toEqual({ state: 'running', fingerprint: 'fp-a' });
    });

    it('gives exactly one of many simultaneous claims of one key the lock', async () => {
      const store = await open();
      const key = uniqueName('key');
      const claims = await Promise.all(Array.from({ length: 20 }, () => store.claim(key, 'fp')));
      expect(claims.filter((c) => c.state === 'claimed')).toHaveLength(1);
      expect(claims.filter((c) => c.state === 'running')).toHaveLength(19);
    });

    it('returns the completed response with its fingerprint, until the TTL has passed', async () => {
      const store = await open();
      const key = uniqueName('key');
      const claim = await store.claim(key, 'fp-a');
      if (claim.state !== 'claimed') throw new Error('not claimed');
      await claim.lock.complete(response);
      expect(await store.claim(key, 'fp-a')).toEqual({ state: 'completed', fingerprint: 'fp-a', response });
      expect(await store.claim(key, 'fp-b')).toEqual({ state: 'completed', fingerprint: 'fp-a', response });
      await setup.wait(setup.ttlMs + 50);
      expect((await store.claim(key, 'fp-b')).state).toBe('claimed');
    });

    it('frees a released key, so that a retry runs', async () => {
      const store = await open();
      const key = uniqueName('key');
      const claim = await store.claim(key, 'fp');
      if (claim.state !== 'claimed') throw new Error('not claimed');
      await claim.lock.release();
      expect((await store.claim(key, 'fp')).state).toBe('claimed');
    });

    it('frees a key whose request never finished once its lock expires', async () => {
      const store = await open();
      const key = uniqueName('key');
      expect((await store.claim(key, 'fp')).state).toBe('claimed');
      await setup.wait(setup.lockTtlMs + 50);
      expect((await store.claim(key, 'fp')).state).toBe('claimed');
    });

    it('lets a request whose lock expired neither complete nor free the key its retry now holds', async () => {
      const store = await open();
      const key = uniqueName('key');
      const late = await store.claim(key, 'fp');
      await setup.wait(setup.lockTtlMs + 50);
      const retry = await store.claim(key, 'fp');
      if (late.state !== 'claimed' || retry.state !== 'claimed') throw new Error('not claimed');
      await late.lock.complete(response);
      await late.lock.release();
      expect(await store.claim(key, 'fp')).toEqual({ state: 'running', fingerprint: 'fp' });
    });

    it('keeps keys apart', async () => {
      const store = await open();
      const [one, two] = [uniqueName('key'), uniqueName('key')];
      expect((await store.claim(one, 'fp')).state).toBe('claimed');
      expect((await store.claim(two, 'fp')).state).toBe('claimed');
    });
  });
}

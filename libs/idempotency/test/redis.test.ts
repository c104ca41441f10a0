import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startRedisServer, uniqueName, type RedisServer, captureLogger } from '@costgov/testing';
import { describeIdempotencyStoreContract } from './contract';
import { createRedisIdempotencyStore } from '../src/redis';

let server: RedisServer;
const { logger } = captureLogger();

beforeAll(async () => {
  server = await startRedisServer();
});
afterAll(async () => {
  await server?.close();
});

const openStore = async (options: { ttlMs?: number; lockTtlMs?: number; timeoutMs?: number } = {}) => {
  const store = createRedisIdempotencyStore({ url: server.url, logger, timeoutMs: 1_000, ...options });
  await store.ready();
  return store;
};

describe('redis idempotency store', () => {
  describeIdempotencyStoreContract({
    open: openStore,
    wait: (ms) => new Promise((resolve) => setTimeout(resolve, ms)),
    ttlMs: 400,
    lockTtlMs: 300,
  });

  it('shares keys between gateway replicas (two clients) and sets the TTLs in Redis', async () => {
    const [one, two] = [await openStore({ lockTtlMs: 60_000 }), await openStore({ ttlMs: 3_600_000 })];
    try {
      const key = uniqueName('shared');
      const claim = await one.claim(key, 'fp');
      expect(await two.claim(key, 'fp')).toEqual({ state: 'running', fingerprint: 'fp' });
      const lockTtl = await server.admin.pttl(`costgov:idem:${key}`);
      expect(lockTtl).toBeGreaterThan(55_000);
      expect(lockTtl).toBeLessThanOrEqual(60_000);
      if (claim.state !== 'claimed') throw new Error('not claimed');
      await claim.lock.complete({ status: 201, headers: {}, bodyBase64: '' });
      // The TTL is the completing replica's (one: the 24 h default).
      expect(await server.admin.pttl(`costgov:idem:${key}`)).toBeGreaterThan(23 * 3_600_000);
      expect((await two.claim(key, 'other')).state).toBe('completed');
    } finally {
      await Promise.all([one.close(), two.close()]);
    }
  });

  it('fails a claim promptly while Redis is down, rather than queueing it', async () => {
    const store = await openStore({ timeoutMs: 200 });
    try {
      await server.stop();
      await expect(store.claim(uniqueName('down'), 'fp')).rejects.toThrow();
    } finally {
      await server.start();
      await store.close();
    }
  });
});

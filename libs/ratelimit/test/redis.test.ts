import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { uniqueName, captureLogger, startRedisServer, type RedisServer } from '@costgov/testing';
import { describeLimiterContract } from './limiter-contract';
import type { LimitPolicy, RateLimiter } from '../src/limiter';
import { createRedisLimiter, type RedisRateLimiter } from '../src/redis';

let server: RedisServer;
const { logger } = captureLogger();

beforeAll(async () => {
  server = await startRedisServer();
});
afterAll(async () => {
  await server?.close();
});

// Generous: a loaded CI machine must not turn a slow answer into a failed test; fallback.test.ts covers timeouts.
const openLimiter = async (leaseTtlMs = 60_000): Promise<RedisRateLimiter> => {
  const limiter = createRedisLimiter({ url: server.url, logger, leaseTtlMs, timeoutMs: 1_000 });
  await limiter.ready();
  return limiter;
};

describe('redis limiter', () => {
  describeLimiterContract({
    open: ({ leaseTtlMs }) => openLimiter(leaseTtlMs),
    now: () => server.time(),
    wait: (ms) => new Promise((resolve) => setTimeout(resolve, ms)),
    exactClock: false,
    refillWaitsMs: [1_250],
  });

  describe('two gateway replicas (two clients) share one budget', () => {
    let replicas: RateLimiter[];
    beforeAll(async () => {
      replicas = [await openLimiter(), await openLimiter()];
    });
    afterAll(async () => {
      await Promise.all(replicas.map((replica) => replica.close()));
    });

    it('grants capacity tokens in total, whichever replica asks', async () => {
      // One token per 100 s: exact counts however long 120 round trips take on a loaded machine.
      const policy: LimitPolicy = { name: 'default', capacity: 120, refillPerSecond: 0.01, concurrency: 10 };
      const key = uniqueName('shared');
      for (let i = 0; i < policy.capacity; i++) {
        const { decision, lease } = await replicas[i % 2]!.acquire(key, policy);
        expect(decision).toMatchObject({ allowed: true, remaining: policy.capacity - 1 - i });
        await lease?.release();
      }
      for (const replica of replicas) {
        expect((await replica.acquire(key, policy)).decision).toMatchObject({
          reason: 'rate',
          retryAfterSeconds: 100,
        });
      }
    });

    it('counts leases held through either replica against one concurrency limit', async () => {
      const policy: LimitPolicy = { name: 'default', capacity: 120, refillPerSecond: 2, concurrency: 10 };
      const key = uniqueName('shared-slots');
      const held = [];
      for (let i = 0; i < policy.concurrency; i++) held.push(await replicas[i % 2]!.acquire(key, policy));
      expect(held.every((a) => a.decision.allowed)).toBe(true);
      for (const replica of replicas) {
        expect((await replica.acquire(key, policy)).decision.reason).toBe('concurrency');
      }
      await held[0]!.lease!.release(); // taken through replica 0, released there, reused through replica 1
      expect((await replicas[1]!.acquire(key, policy)).decision.allowed).toBe(true);
    });
  });

  describe('what it stores', () => {
    it('keeps a bucket and its leases under the prefix, expiring once idle', async () => {
      const limiter = createRedisLimiter({
        url: server.url,
        logger,
        timeoutMs: 1_000,
        keyPrefix: 'test:rl:',
      });
      await limiter.ready();
      const policy: LimitPolicy = { name: 'scim', capacity: 600, refillPerSecond: 10, concurrency: 20 };
      const key = uniqueName('stored');
      const { lease } = await limiter.acquire(key, policy);
      const tokensKey = `test:rl:{scim:${key}}:tokens`;
      const leasesKey = `test:rl:{scim:${key}}:leases`;
      expect(Number(await server.admin.hget(tokensKey, 'tokens'))).toBeCloseTo(599, 0);
      // One token short of full refills in 100 ms at 10/s; a lease lives 60 s by default.
      expect(await server.admin.pttl(tokensKey)).toBeLessThanOrEqual(100);
      expect(await server.admin.pttl(leasesKey)).toBeGreaterThan(59_000);
      await lease?.release();
      expect(await server.admin.zcard(leasesKey)).toBe(0);
      await limiter.close();
    });
  });

  describe('Redis unreachable when the limiter is created', () => {
    const policy: LimitPolicy = { name: 'default', capacity: 120, refillPerSecond: 2, concurrency: 10 };

    it('fails each acquire at once without crashing, reports not ready, and connects once Redis is there', async () => {
      await server.kill();
      const uncaught: unknown[] = [];
      const onUncaught = (error: unknown) => uncaught.push(error);
      process.on('uncaughtException', onUncaught);
      const limiter = createRedisLimiter({ url: server.url, logger, timeoutMs: 1_000 });
      try {
        await expect(limiter.ready(300)).rejects.toThrow(
          /Redis at redis:\/\/127\.0\.0\.1:\d+\/? not ready within 300 ms/,
        );
        const started = performance.now();
        await expect(limiter.acquire('down', policy)).rejects.toThrow(
          /Redis did not answer for policy default/,
        );
        // No offline queue: the refusal comes at once, not after the 1 s timeout (bound loose enough for a
        // loaded CI machine, where 50 ms was once exceeded by 13 ms).
        expect(performance.now() - started).toBeLessThan(500);

        await server.start();
        await limiter.ready(5_000); // reconnects by itself, backing off to one attempt a second
        expect((await limiter.acquire('up', policy)).decision.allowed).toBe(true);
        expect(uncaught).toEqual([]);
      } finally {
        process.off('uncaughtException', onUncaught);
        await limiter.close();
      }
    });
  });
});

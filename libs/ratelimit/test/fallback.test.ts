import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  eventually,
  uniqueName,
  captureLogger,
  startRedisServer,
  timed,
  type RedisServer,
} from '@costgov/testing';
import { metrics } from '@costgov/telemetry';
import { createFallbackLimiter } from '../src/fallback';
import type { LimitPolicy, RateLimiter } from '../src/limiter';
import { createMemoryLimiter } from '../src/memory';
import { createRedisLimiter } from '../src/redis';

const policy: LimitPolicy = { name: 'default', capacity: 120, refillPerSecond: 2, concurrency: 10 };
const timeoutMs = 200; // far above CI noise (a prompt answer takes a few ms), below anything a caller would notice
const fallingBack = 'rate limiter falling back to per-process limits';
const backOnRedis = 'rate limiter back on Redis';

let server: RedisServer;
let limiter: RateLimiter;
let primaryCalls = 0;
const transitions: boolean[] = [];
const { logger, lines } = captureLogger();

const logged = (msg: string) => lines.filter((line) => line.msg === msg).map((line) => line.level);
const metricValue = async (name: string) => {
  const metric = metrics.registry.getSingleMetric(name);
  if (!metric) throw new Error(`metric ${name} is not registered`);
  return (await metric.get()).values.reduce((sum, { value }) => sum + value, 0);
};
const storedInRedis = async (key: string) =>
  (await server.admin.exists(`costgov:rl:{default:${key}}:tokens`)) === 1;

/**
 * Answers come at once: a few ms typically (the median is bounded well above that, for a loaded CI
 * machine), and none near what a queueing client or a reconnect takes.
 */
const expectPrompt = (latenciesMs: number[]) => {
  const sorted = [...latenciesMs].sort((a, b) => a - b);
  expect(sorted[Math.floor(sorted.length / 2)]).toBeLessThan(25);
  expect(sorted.at(-1)).toBeLessThan(timeoutMs - 50); // none waited on Redis
};

/** Acquires and releases at once, as a short request does, and says how long the answer took. */
const request = (key: string) =>
  timed(async () => {
    const acquisition = await limiter.acquire(key, policy);
    await acquisition.lease?.release();
    return acquisition.decision;
  });

/** Sends requests every 25 ms until the limiter is back on Redis. */
const untilBackOnRedis = (key: string, outages: number) =>
  eventually(async () => {
    await request(key);
    return transitions.filter((active) => !active).length === outages ? true : undefined;
  }, 10_000);

beforeAll(async () => {
  server = await startRedisServer();
  const redis = createRedisLimiter({ url: server.url, logger, timeoutMs });
  await redis.ready();
  const primary: RateLimiter = {
    acquire: (key, p) => {
      primaryCalls++;
      return redis.acquire(key, p);
    },
    close: () => redis.close(),
  };
  limiter = createFallbackLimiter({
    primary,
    fallback: createMemoryLimiter(),
    logger,
    onFallback: (active) => transitions.push(active),
  });
});
afterAll(async () => {
  await limiter?.close();
  await server?.close();
});

describe('fallback limiter', () => {
  describe('while Redis answers', () => {
    it('answers from Redis and counts nothing as fallback', async () => {
      const key = uniqueName('up');
      expect((await request(key)).value.allowed).toBe(true);
      expect(await storedInRedis(key)).toBe(true);
      expect(await metricValue('ratelimit_fallback_total')).toBe(0);
      expect(await metricValue('ratelimit_fallback_active')).toBe(0);
      expect(lines.filter((line) => line.level !== 'debug')).toEqual([]);
    });
  });

  describe('Redis stopped under traffic', () => {
    const key = uniqueName('outage');

    it('keeps answering from the per-process limiter within milliseconds, logging once and counting', async () => {
      for (let i = 0; i < 5; i++) expect((await request(key)).value.allowed).toBe(true);
      const countedBefore = await metricValue('ratelimit_fallback_total');

      await server.stop();
      const answers = [];
      for (let i = 0; i < 50; i++) answers.push(await request(key));

      // The per-process bucket starts full: it knows nothing of the 5 taken from Redis.
      expect(answers.map((a) => a.value.remaining)).toEqual(answers.map((_, i) => policy.capacity - 1 - i));
      expectPrompt(answers.map((a) => a.ms));
      expect(logged(fallingBack)).toEqual(['warn']);
      expect(transitions).toEqual([true]);
      expect(await metricValue('ratelimit_fallback_total')).toBe(countedBefore + 50);
      expect(await metricValue('ratelimit_fallback_active')).toBe(1);
    });

    it('tries Redis again about once a second, not on every request', async () => {
      const callsBefore = primaryCalls;
      const until = Date.now() + 1_200;
      let requests = 0;
      while (Date.now() < until) {
        await request(key);
        requests++;
        await new Promise((resolve) => setTimeout(resolve, 5));
      }
      expect(requests).toBeGreaterThan(50);
      expect(primaryCalls - callsBefore).toBeGreaterThanOrEqual(1);
      expect(primaryCalls - callsBefore).toBeLessThanOrEqual(2);
      expect(logged(fallingBack)).toEqual(['warn']);
    });

    it('releases leases it granted into the per-process limiter', async () => {
      const slotsKey = uniqueName('outage-slots');
      const held = [];
      for (let i = 0; i < policy.concurrency; i++) held.push(await limiter.acquire(slotsKey, policy));
      expect((await limiter.acquire(slotsKey, policy)).decision.reason).toBe('concurrency');
      await held[0]!.lease!.release();
      expect((await limiter.acquire(slotsKey, policy)).decision.allowed).toBe(true);
    });
  });

  describe('Redis restarted', () => {
    it('is used again once it answers, logged once, with the gauge back to 0', async () => {
      await server.start();
      const key = uniqueName('back');
      await untilBackOnRedis(key, 1);

      expect(logged(backOnRedis)).toEqual(['info']);
      expect(logged(fallingBack)).toEqual(['warn']);
      expect(transitions).toEqual([true, false]);
      expect(await metricValue('ratelimit_fallback_active')).toBe(0);
      const counted = await metricValue('ratelimit_fallback_total');
      for (let i = 0; i < 5; i++) await request(key);
      expect(await metricValue('ratelimit_fallback_total')).toBe(counted);
      expect(await storedInRedis(key)).toBe(true);
    });
  });

  describe('Redis frozen: connected but not answering', () => {
    it(`falls back after the ${timeoutMs} ms command timeout and returns when Redis thaws`, async () => {
      const key = uniqueName('frozen');
      server.freeze();
      try {
        const first = await request(key);
        const callsBefore = primaryCalls;
        const rest = [];
        for (let i = 0; i < 20; i++) rest.push(await request(key));
        expect(primaryCalls, 'none of the next requests waited on the frozen Redis').toBe(callsBefore);
        expect(first.value.allowed).toBe(true);
        expect(first.ms).toBeGreaterThanOrEqual(timeoutMs - 5);
        // At the timeout, not at a later line such as the 1 s between tries of Redis; the slack is for a
        // timer firing late on a loaded machine.
        expect(first.ms).toBeLessThan(timeoutMs + 450);
        expectPrompt(rest.map((a) => a.ms));
        expect(logged(fallingBack)).toEqual(['warn', 'warn']);
        expect(await metricValue('ratelimit_fallback_active')).toBe(1);
      } finally {
        server.thaw();
      }
      await untilBackOnRedis(key, 2);
      expect(logged(backOnRedis)).toEqual(['info', 'info']);
      expect(await metricValue('ratelimit_fallback_active')).toBe(0);
    });
  });
});

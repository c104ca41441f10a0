import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  eventually,
  startRedisServer,
  uniqueName,
  type RedisServer,
  captureLogger,
  timed,
} from '@costgov/testing';
import { metrics } from '@costgov/telemetry';
import { createFallbackIdempotencyStore } from '../src/fallback';
import { createMemoryIdempotencyStore } from '../src/memory';
import { createRedisIdempotencyStore } from '../src/redis';
import type { IdempotencyStore } from '../src/store';

const fallingBack = 'idempotency keys falling back to per-process storage';
let server: RedisServer;
let store: IdempotencyStore;
const { logger, lines } = captureLogger();
const logged = (msg: string) => lines.filter((line) => line.msg === msg).length;
const gauge = async () =>
  (await metrics.registry.getSingleMetric('idempotency_fallback_active')!.get()).values[0]?.value;

beforeAll(async () => {
  server = await startRedisServer();
  const primary = createRedisIdempotencyStore({ url: server.url, logger, timeoutMs: 200 });
  await primary.ready();
  store = createFallbackIdempotencyStore({
    primary,
    fallback: createMemoryIdempotencyStore(),
    logger,
    retryIntervalMs: 100,
  });
});
afterAll(async () => {
  await store?.close();
  await server?.close();
});

describe('idempotency store falling back while Redis is down', () => {
  it('keeps keys in Redis while it answers', async () => {
    const key = uniqueName('up');
    expect((await store.claim(key, 'fp')).state).toBe('claimed');
    expect(await server.admin.exists(`costgov:idem:${key}`)).toBe(1);
    expect(await gauge()).toBe(0);
  });

  it('keeps answering per process during an outage, logging it once, and returns to Redis after', async () => {
    await server.stop();
    try {
      const key = uniqueName('down');
      const first = await store.claim(key, 'fp');
      expect(first.state).toBe('claimed');
      // The retry in the same process still finds the key: per-process protection, not none.
      expect(await store.claim(key, 'fp')).toEqual({ state: 'running', fingerprint: 'fp' });
      // No wait on the dead Redis between retries: a queued command would take the 200 ms timeout. The
      // median of five claims is bounded below that line: one claim alone can meet a pause of a loaded
      // CI machine with no wait on Redis at all.
      const claims: number[] = [];
      for (let i = 0; i < 5; i++) claims.push((await timed(() => store.claim(uniqueName('down'), 'fp'))).ms);
      expect(claims.sort((a, b) => a - b)[2]).toBeLessThan(150);
      expect(logged(fallingBack)).toBe(1);
      expect(await gauge()).toBe(1);
    } finally {
      await server.start();
    }
    await eventually(async () => {
      const key = uniqueName('back');
      await store.claim(key, 'fp');
      return (await server.admin.exists(`costgov:idem:${key}`)) === 1 || undefined;
    });
    expect(logged('idempotency keys back on Redis')).toBe(1);
    expect(await gauge()).toBe(0);
  });
});

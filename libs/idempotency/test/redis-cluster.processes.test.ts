import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  captureLogger,
  eventually,
  redisClusterBinaries,
  startRedisCluster,
  uniqueName,
  type RedisCluster,
  type RedisClusterNode,
} from '@costgov/testing';
import { createFallbackIdempotencyStore } from '../src/fallback';
import { createMemoryIdempotencyStore } from '../src/memory';
import { createRedisIdempotencyStore } from '../src/redis';
import type { IdempotencyStore, StoredResponse } from '../src/store';

/**
 * Issue 19: the Idempotency-Key store on a Redis Cluster of three masters (no replicas) on loopback, two
 * stores standing for two gateway replicas. Keys spread over every master; each key, sent to both at
 * once, has one effect. With a master killed the stores answer per process (as on a single Redis that is
 * down), and once it is back they share keys again without a restart. Runs with the other process tests
 * (REDIS_URL set), on servers of its own.
 */
const runs = Boolean(process.env.REDIS_URL) && redisClusterBinaries() !== undefined;
const keyPrefix = 'costgov:idem:';
const fallingBack = 'idempotency keys falling back to per-process storage';
const backOnRedis = 'idempotency keys back on Redis';

describe.skipIf(!runs)('idempotency store on a Redis Cluster of three masters, one killed', () => {
  const { logger, lines } = captureLogger({ level: 'debug' });
  let cluster: RedisCluster;
  let stores: IdempotencyStore[];
  const logged = (msg: string) => lines.filter((line) => line.msg === msg).length;

  beforeAll(async () => {
    cluster = await startRedisCluster({ masters: 3, nodeTimeoutMs: 1_000 });
    stores = [];
    for (let i = 0; i < 2; i++) {
      const primary = createRedisIdempotencyStore({
        url: cluster.url,
        cluster: true,
        logger,
        timeoutMs: 1_000,
      });
      await primary.ready(10_000);
      stores.push(
        createFallbackIdempotencyStore({
          primary,
          fallback: createMemoryIdempotencyStore(),
          logger,
          retryIntervalMs: 200,
        }),
      );
    }
  }, 60_000);

  afterAll(async () => {
    for (const store of stores ?? []) await store.close();
    await cluster?.close();
  });

  /**
   * What the gateway does with a keyed request: claim, run the effect only when claimed, keep the
   * response. Each key goes to both stores at once; returns how many effects each key had.
   */
  const sendToBoth = async (keys: string[]) => {
    const effects = new Map<string, number>(keys.map((key) => [key, 0]));
    const once = async (store: IdempotencyStore, key: string) => {
      const claim = await store.claim(key, 'fp');
      if (claim.state !== 'claimed') return;
      effects.set(key, effects.get(key)! + 1);
      const response: StoredResponse = {
        status: 201,
        headers: {},
        bodyBase64: Buffer.from(key).toString('base64'),
      };
      await claim.lock.complete(response);
    };
    await Promise.all(keys.flatMap((key) => stores.map((store) => once(store, key))));
    return keys.map((key) => effects.get(key)!);
  };

  /** `count` keys whose slots are on `node` (or on any master but it, with `avoid`). */
  const keysOn = async (node: RedisClusterNode, count: number, avoid = false) => {
    const keys: string[] = [];
    while (keys.length < count) {
      const key = uniqueName('idem');
      const onNode = (await cluster.masterOf(keyPrefix + key)).port === node.port;
      if (onNode !== avoid) keys.push(key);
    }
    return keys;
  };

  it('gives each key one effect across two stores, with keys on every master', async () => {
    const keys = (await Promise.all(cluster.nodes.map((node) => keysOn(node, 5)))).flat();
    const masters = new Set(
      await Promise.all(keys.map(async (key) => (await cluster.masterOf(keyPrefix + key)).port)),
    );
    expect(masters.size).toBe(cluster.nodes.length);
    expect(await sendToBoth(keys)).toEqual(keys.map(() => 1));
    // A retry after completion is answered from the kept response, by either store.
    const replay = await stores[1]!.claim(keys[0]!, 'fp');
    expect(replay).toMatchObject({
      state: 'completed',
      response: { bodyBase64: Buffer.from(keys[0]!).toString('base64') },
    });
    expect(logged(fallingBack)).toBe(0);
  });

  it('answers per process while a master is down, then shares keys again once it is back', async () => {
    const victim = cluster.nodes[1]!;
    const during = await keysOn(victim, 5);
    await victim.kill();
    // Each store claims each key for itself: per-process protection, as when a single Redis is down.
    expect(await sendToBoth(during)).toEqual(during.map(() => 2));
    expect(logged(fallingBack)).toBe(2);
    // A retry to the same store is still answered from what that store kept.
    expect((await stores[0]!.claim(during[0]!, 'fp')).state).toBe('completed');

    await victim.start();
    await cluster.healthy();
    await eventually(async () => {
      await Promise.all(stores.map((store) => store.claim(uniqueName('probe'), 'fp')));
      return logged(backOnRedis) === 2 ? true : undefined;
    }, 20_000);
    const after = [...(await keysOn(victim, 5)), ...(await keysOn(victim, 5, true))];
    expect(await sendToBoth(after)).toEqual(after.map(() => 1));
    expect(await victim.admin.exists(keyPrefix + after[0]!)).toBe(1);
  }, 60_000);
});

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Logger } from '@costgov/log';
import {
  captureLogger,
  eventually,
  redisClusterBinaries,
  startRedisCluster,
  timed,
  uniqueName,
  type RedisCluster,
  type RedisClusterNode,
} from '@costgov/testing';
import { createFallbackLimiter } from '../src/fallback';
import type { LimitPolicy, RateLimiter } from '../src/limiter';
import { createMemoryLimiter } from '../src/memory';
import { createRedisLimiter } from '../src/redis';

/**
 * Issue 19: the limiter on a Redis Cluster of three masters (no replicas) on loopback, two limiter
 * instances standing for two gateway replicas. The master holding a bucket is killed with SIGKILL: both
 * keep answering from their per-process limits; once it is started again (same port, same nodes file)
 * they share one bucket again, without a restart. Runs with the other process tests (REDIS_URL set), on
 * servers of its own.
 */
const runs = Boolean(process.env.REDIS_URL) && redisClusterBinaries() !== undefined;

// Barely refills during the test (one token every 100 s), so a bucket's count is what was taken from it.
const policy: LimitPolicy = { name: 'cluster', capacity: 20, refillPerSecond: 0.01, concurrency: 1_000 };
// Far above a prompt answer (a few ms) even on a loaded CI machine; a killed master fails faster still.
const timeoutMs = 1_000;
const keyPrefix = 'costgov:rl:';
const tokensKey = (key: string) => `${keyPrefix}{${policy.name}:${key}}:tokens`;

interface Instance {
  limiter: RateLimiter;
  /** onFallback's calls: true when an outage starts, false when the cluster answers again. */
  transitions: boolean[];
}

/** Acquires (and releases at once) up to `limit` times; how many were allowed, and the slowest answer. */
async function take({ limiter }: Instance, key: string, limit: number) {
  let allowed = 0;
  let slowestMs = 0;
  for (let i = 0; i < limit; i++) {
    const { value, ms } = await timed(async () => {
      const acquisition = await limiter.acquire(key, policy);
      await acquisition.lease?.release();
      return acquisition.decision;
    });
    slowestMs = Math.max(slowestMs, ms);
    if (value.allowed) allowed++;
  }
  return { allowed, slowestMs };
}

/**
 * Two instances consume one bucket: the first takes `half`, the second whatever is left (and more).
 * What each was allowed, and the slowest answer.
 */
async function shareOneBucket(instances: Instance[], key: string) {
  const half = Math.floor(policy.capacity / 2);
  const first = await take(instances[0]!, key, half);
  const second = await take(instances[1]!, key, policy.capacity);
  return {
    first: first.allowed,
    second: second.allowed,
    slowestMs: Math.max(first.slowestMs, second.slowestMs),
  };
}

/** Two limiters on the cluster, each with its per-process fallback: two gateway replicas. */
async function twoInstances(cluster: RedisCluster, logger: Logger): Promise<Instance[]> {
  const instances: Instance[] = [];
  for (let i = 0; i < 2; i++) {
    const transitions: boolean[] = [];
    const primary = createRedisLimiter({ url: cluster.url, cluster: true, logger, timeoutMs, keyPrefix });
    await primary.ready(10_000);
    const limiter = createFallbackLimiter({
      primary,
      fallback: createMemoryLimiter(),
      logger,
      onFallback: (active) => transitions.push(active),
    });
    instances.push({ limiter, transitions });
  }
  return instances;
}

describe.skipIf(!runs)('rate limiter on a Redis Cluster of three masters, one killed', () => {
  const { logger } = captureLogger({ level: 'debug' });
  let cluster: RedisCluster;
  let instances: Instance[];
  let victim: RedisClusterNode;
  /** Buckets whose keys hash to the victim's slots: one per phase, each starting full. */
  let keys: { before: string; during: string; after: string; probe: string };

  beforeAll(async () => {
    cluster = await startRedisCluster({ masters: 3, nodeTimeoutMs: 1_000 });
    instances = await twoInstances(cluster, logger);
    // The victim is the master of the first bucket; the other buckets are picked on the same master.
    const first = uniqueName('tenant');
    victim = await cluster.masterOf(tokensKey(first));
    const onVictim: string[] = [first];
    for (let i = 0; onVictim.length < 4; i++) {
      const candidate = `${first}-${i}`;
      if ((await cluster.masterOf(tokensKey(candidate))).port === victim.port) onVictim.push(candidate);
    }
    const [before, during, after, probe] = onVictim as [string, string, string, string];
    keys = { before, during, after, probe };
  }, 60_000);

  afterAll(async () => {
    for (const { limiter } of instances ?? []) await limiter.close();
    await cluster?.close();
  });

  it('shares one bucket across two instances while the cluster is healthy', async () => {
    const { first, second } = await shareOneBucket(instances, keys.before);
    const half = Math.floor(policy.capacity / 2);
    expect(first).toBe(half);
    expect(second).toBe(policy.capacity - half);
    // The bucket lives on the master the test picked, found there by a plain (non-cluster) client.
    expect(await victim.admin.exists(tokensKey(keys.before))).toBe(1);
    for (const { transitions } of instances) expect(transitions).toEqual([]);
  });

  it('falls back to per-process limits, still answering promptly, when that master is killed', async () => {
    await victim.kill();
    const answers = await Promise.all(
      instances.map((instance) => take(instance, keys.during, policy.capacity)),
    );
    // Each instance grants the whole bucket from its own memory: twice what one shared bucket holds.
    expect(answers.map((answer) => answer.allowed)).toEqual([policy.capacity, policy.capacity]);
    // The first request of each waited at most the Redis timeout; none waited for the cluster.
    for (const { slowestMs } of answers) expect(slowestMs).toBeLessThan(timeoutMs + 1_000);
    for (const { transitions } of instances) expect(transitions).toEqual([true]);
  });

  it('keeps falling back once the whole cluster reports CLUSTERDOWN', async () => {
    // Without a replica to promote, the others mark the victim failed and refuse every slot.
    const survivor = cluster.nodes.find((node) => node.port !== victim.port)!;
    await eventually(async () => {
      expect(String(await survivor.admin.call('CLUSTER', 'INFO'))).toContain('cluster_state:fail');
      return true;
    }, 15_000);
    // A bucket on a master that still runs, refused too.
    let elsewhere = uniqueName('elsewhere');
    while ((await cluster.masterOf(tokensKey(elsewhere))).port === victim.port) elsewhere += '-';
    const answers = await Promise.all(instances.map((instance) => take(instance, elsewhere, 3)));
    expect(answers.map((answer) => answer.allowed)).toEqual([3, 3]);
    for (const { transitions } of instances) expect(transitions).toEqual([true]);
  });

  it('shares limits again once the master is back, without a restart of the instances', async () => {
    await victim.start();
    await cluster.healthy();
    // Each instance tries the cluster again about once a second and leaves the fallback on success.
    await eventually(async () => {
      for (const instance of instances) await take(instance, keys.probe, 1);
      return instances.every(({ transitions }) => transitions.at(-1) === false) ? true : undefined;
    }, 20_000);
    for (const { transitions } of instances) expect(transitions).toEqual([true, false]);

    const { first, second } = await shareOneBucket(instances, keys.after);
    const half = Math.floor(policy.capacity / 2);
    expect(first).toBe(half);
    expect(second).toBe(policy.capacity - half);
    expect(await victim.admin.exists(tokensKey(keys.after))).toBe(1);
  }, 60_000);
});

/**
 * A cluster as large tenants run it: three masters with a replica each. The master holding a bucket is
 * killed with SIGKILL and stays down: its replica is promoted, and both instances go back to one shared
 * bucket on their own (the cluster client follows the slots to the new master) while the old master is
 * still gone.
 */
describe.skipIf(!runs)('rate limiter on a Redis Cluster with replicas, one master killed for good', () => {
  const { logger } = captureLogger({ level: 'debug' });
  let cluster: RedisCluster;
  let instances: Instance[];

  beforeAll(async () => {
    cluster = await startRedisCluster({ masters: 3, replicas: 1, nodeTimeoutMs: 1_000 });
    instances = await twoInstances(cluster, logger);
  }, 60_000);

  afterAll(async () => {
    for (const { limiter } of instances ?? []) await limiter.close();
    await cluster?.close();
  });

  it('promotes the replica and shares one bucket on it again, the old master still down', async () => {
    const key = uniqueName('replicated');
    expect(await shareOneBucket(instances, key)).toMatchObject({
      first: policy.capacity / 2,
      second: policy.capacity / 2,
    });
    const master = await cluster.masterOf(tokensKey(key));
    // Fresh buckets on the same master's slots, one per try after the kill.
    const onMaster: string[] = [];
    for (let i = 0; onMaster.length < 60; i++) {
      const candidate = `${key}-${i}`;
      if ((await cluster.masterOf(tokensKey(candidate))).port === master.port) onMaster.push(candidate);
    }
    await master.kill();

    // Through the failover every answer comes promptly: from the cluster, or from the per-process
    // fallback while the slots have no master. Then a fresh bucket is shared again, on the promoted replica.
    let slowestMs = 0;
    let after = '';
    await eventually(async () => {
      after = onMaster.shift()!;
      const { first, second, ...answer } = await shareOneBucket(instances, after);
      slowestMs = Math.max(slowestMs, answer.slowestMs);
      if (first === policy.capacity / 2 && second === policy.capacity / 2) return true;
      await new Promise((resolve) => setTimeout(resolve, 500)); // 60 buckets last the 30 s
      return undefined;
    }, 30_000);
    expect(slowestMs).toBeLessThan(timeoutMs + 1_000);
    for (const { transitions } of instances) expect(transitions.at(-1) ?? false).toBe(false);
    const promoted = await cluster.masterOf(tokensKey(after));
    expect(promoted.port).not.toBe(master.port);
    expect(await promoted.admin.exists(tokensKey(after))).toBe(1);
  }, 90_000);
});

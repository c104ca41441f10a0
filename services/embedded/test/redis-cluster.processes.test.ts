import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  realInfra,
  redisClusterBinaries,
  startRedisCluster,
  type GatewayProcess,
  type RedisCluster,
} from '@costgov/testing';
import { expectOneSharedBucket, startTwoGateways, type TwoGateways } from './support/two-gateways';

/**
 * Two gateway processes configured as a large tenant runs them (REDIS_URL a seed of a three-master Redis
 * Cluster, REDIS_CLUSTER=on): the rate limits and the Idempotency-Key records are the cluster's, shared
 * by both gateways, and neither gateway falls back to per-process storage.
 * The cluster's failures are tried in libs/ratelimit and libs/idempotency; this is the gateway's wiring.
 */
describe.runIf(realInfra && redisClusterBinaries())('gateways on a Redis Cluster (REDIS_CLUSTER=on)', () => {
  let system: TwoGateways;
  let cluster: RedisCluster;
  let gateways: GatewayProcess[] = [];
  const newKey = () => system.newKey();

  beforeAll(async () => {
    cluster = await startRedisCluster();
    system = await startTwoGateways('rc', { LOG_LEVEL: 'info', REDIS_URL: cluster.url, REDIS_CLUSTER: 'on' });
    gateways = system.gateways;
  }, 180_000);

  afterAll(async () => {
    await system?.stop();
    await cluster?.close();
  }, 60_000);

  it('shares one token bucket between the two gateways', async () => {
    await expectOneSharedBucket(system.gateways, await newKey());
  });

  it('answers a key sent to one gateway from the other with the first answer', async () => {
    const key = await newKey();
    const create = (gateway: GatewayProcess, idempotencyKey: string, name: string) =>
      fetch(`${gateway.url}/v1/guard/projects`, {
        method: 'POST',
        headers: {
          authorization: `Bearer ${key}`,
          'content-type': 'application/json',
          'idempotency-key': idempotencyKey,
        },
        body: JSON.stringify({ name }),
      });
    for (let i = 0; i < 12; i++) {
      const idempotencyKey = `cluster-${i}-${key.slice(-8)}`;
      const name = `cluster project ${i}`;
      const first = await create(gateways[i % 2]!, idempotencyKey, name);
      expect(first.status).toBe(201);
      const { data } = (await first.json()) as { data: { id: string } };
      const again = await create(gateways[(i + 1) % 2]!, idempotencyKey, name);
      expect(again.status).toBe(201);
      expect(again.headers.get('idempotent-replayed')).toBe('true');
      expect(((await again.json()) as { data: { id: string } }).data.id).toBe(data.id);
    }
    const list = await fetch(`${gateways[0]!.url}/v1/guard/projects?per_page=100`, {
      headers: { authorization: `Bearer ${key}` },
    });
    const names = ((await list.json()) as { data: Array<{ name: string }> }).data
      .map((project) => project.name)
      .filter((name) => name.startsWith('cluster project '));
    expect(names.sort()).toEqual(Array.from({ length: 12 }, (_, i) => `cluster project ${i}`).sort());
  });

  it('keeps its records in the cluster and never falls back to per-process storage', async () => {
    // Each key on the master of its slot: the twelve Idempotency-Key records, and the rate limits'.
    const keysOf = async (pattern: string) => {
      let count = 0;
      for (const node of cluster.nodes)
        count += ((await node.admin.call('KEYS', pattern)) as string[]).length;
      return count;
    };
    expect(await keysOf('costgov:idem:*')).toBe(12);
    expect(await keysOf('costgov:rl:*')).toBeGreaterThan(0);
    for (const gateway of gateways) {
      const metrics = await (await fetch(gateway.metricsUrl)).text();
      expect(metrics).toMatch(/^ratelimit_fallback_active 0$/m);
      expect(metrics).toMatch(/^idempotency_fallback_active 0$/m);
      expect(metrics).not.toMatch(/^(ratelimit|idempotency)_fallback_total(\{[^}]*\})? [1-9]/m);
      expect(gateway.proc.output()).not.toMatch(/falling back|kept per process/);
    }
  });
});

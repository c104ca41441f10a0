import { request, type ClientRequest } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  eventually,
  realInfra,
  startRedisServer,
  type GatewayProcess,
  type RedisServer,
} from '@costgov/testing';
import { expectOneSharedBucket, startTwoGateways, type TwoGateways } from './support/two-gateways';

// Long enough that holding 10 slots on a loaded CI machine never outlasts it before the kill.
const leaseTtlMs = 6_000;

/**
 * Two gateway processes on one Redis (a redis-server of this test's own): the budget is shared, slots
 * of a killed gateway expire, and a stopped Redis degrades to per-process limits without failing requests.
 */
describe.runIf(realInfra)('rate limits across gateway processes on one Redis', () => {
  let system: TwoGateways;
  let redis: RedisServer;
  let gatewayA: GatewayProcess;
  let gatewayB: GatewayProcess;
  const newKey = () => system.newKey();

  const get = (url: string, key: string) =>
    fetch(`${url}/v1/guard/projects?per_page=1`, { headers: { authorization: `Bearer ${key}` } });

  /** A POST that sends half its body and waits: it holds a concurrency slot until destroyed. */
  function hold(url: string, key: string): ClientRequest {
    const { hostname, port } = new URL(url);
    const req = request({
      host: hostname,
      port: Number(port),
      method: 'POST',
      path: '/v1/guard/projects',
      headers: {
        authorization: `Bearer ${key}`,
        'content-type': 'application/json',
        'content-length': '100',
      },
    });
    req.on('error', () => undefined);
    req.write('{"name":');
    return req;
  }

  beforeAll(async () => {
    redis = await startRedisServer();
    system = await startTwoGateways('rl', {
      LOG_LEVEL: 'info',
      REDIS_URL: redis.url,
      RATE_LIMIT_LEASE_TTL_MS: `${leaseTtlMs}`,
      RATE_LIMIT_REDIS_TIMEOUT_MS: '250',
      // The gateway refuses a body time bound at or above the lease TTL.
      HEADERS_TIMEOUT_MS: `${leaseTtlMs - 1_000}`,
      BODY_TIMEOUT_MS: `${leaseTtlMs - 500}`,
    });
    [gatewayA, gatewayB] = system.gateways;
  }, 180_000);

  afterAll(async () => {
    await system?.stop();
    await redis?.close();
  }, 60_000);

  it('shares one token bucket between the two gateways', async () => {
    await expectOneSharedBucket(system.gateways, await newKey());
  });

  it('shares the 10 concurrency slots between the two gateways', async () => {
    const key = await newKey();
    // The requests holding a slot, by gateway. A poll can take a slot for a moment just as a hold arrives,
    // which is then refused: it is sent again, as in the lease test below.
    const holding = new Map<ClientRequest, 'A' | 'B'>();
    let allHeld = false;
    const holdAgainWhenRefused = (gateway: 'A' | 'B'): void => {
      const req = hold(gateway === 'A' ? gatewayA.url : gatewayB.url, key);
      holding.set(req, gateway);
      req.on('response', (res) => {
        res.resume();
        holding.delete(req);
        if (res.statusCode === 429 && !allHeld) holdAgainWhenRefused(gateway);
      });
    };
    for (let i = 0; i < 5; i++) {
      holdAgainWhenRefused('A');
      holdAgainWhenRefused('B');
    }
    // Polled every 150 ms until A says 'in flight', for the reason given in the lease test below: fast polls
    // on a loaded machine could spend the bucket, and a 429 for rate would prove nothing about the slots.
    const deadline = Date.now() + 20_000;
    for (;;) {
      const reply = await get(gatewayA.url, key);
      if (reply.status === 429 && (await reply.text()).includes('in flight')) break;
      if (Date.now() > deadline) throw new Error('gateway A never saw the ten slots held in flight');
      await new Promise((resolve) => setTimeout(resolve, 150));
    }
    allHeld = true;
    expect((await get(gatewayB.url, key)).status).toBe(429);
    const oneOfB = [...holding].find(([, gateway]) => gateway === 'B')![0];
    holding.delete(oneOfB);
    oneOfB.destroy();
    await eventually(async () => ((await get(gatewayA.url, key)).status === 200 ? true : undefined));
    for (const req of holding.keys()) req.destroy();
  });

  it('keeps serving from per-process limits while Redis is down, logs and counts it once, and goes back when it returns', async () => {
    const key = await newKey();
    expect((await get(gatewayB.url, key)).status).toBe(200);
    await redis.stop();
    const latencies: number[] = [];
    for (let i = 0; i < 20; i++) {
      const started = Date.now();
      expect((await get(gatewayB.url, key)).status).toBe(200);
      latencies.push(Date.now() - started);
    }
    latencies.sort((a, b) => a - b);
    expect(latencies[10]).toBeLessThan(250);
    const metrics = await (await fetch(gatewayB.metricsUrl)).text();
    expect(metrics).toMatch(/^ratelimit_fallback_active 1$/m);
    expect(Number(metrics.match(/^ratelimit_fallback_total\{[^}]*\} (\d+)$/m)?.[1])).toBeGreaterThanOrEqual(
      20,
    );
    expect(gatewayB.proc.output().match(/falling back to per-process limits/g)).toHaveLength(1);

    await redis.start();
    await eventually(async () => {
      await get(gatewayB.url, key);
      const text = await (await fetch(gatewayB.metricsUrl)).text();
      return /^ratelimit_fallback_active 0$/m.test(text) ? true : undefined;
    }, 20_000);
    expect(gatewayB.proc.output()).toContain('rate limiter back on Redis');
  });

  it('frees the slots of a gateway killed with requests in flight once their leases expire', async () => {
    const key = await newKey();
    // Leases expire leaseTtlMs after they were taken, which is after this moment.
    const heldAt = Date.now();
    // B's polling GET can take a slot for a moment just as a hold arrives at A, which then refuses that
    // hold: send it again until A holds all ten, which B sees as "in flight" (not the bucket running dry).
    const held: ClientRequest[] = [];
    let killed = false;
    const holdAgainWhenRefused = (): void => {
      const req = hold(gatewayA.url, key);
      req.on('response', (res) => {
        res.resume();
        if (res.statusCode === 429 && !killed) holdAgainWhenRefused();
      });
      held.push(req);
    };
    for (let i = 0; i < 10; i++) holdAgainWhenRefused();
    // Polled every 150 ms, not eventually's 25 ms: on a loaded machine the holds can take seconds to
    // arrive, and fast polls would spend the key's bucket (120) and get 'rate' instead of 'in flight'.
    const deadline = Date.now() + 20_000;
    for (;;) {
      const reply = await get(gatewayB.url, key);
      if (reply.status === 429 && (await reply.text()).includes('in flight')) break;
      if (Date.now() > deadline) throw new Error('gateway B never saw the ten slots held at A in flight');
      await new Promise((resolve) => setTimeout(resolve, 150));
    }
    killed = true;
    gatewayA.proc.child.kill('SIGKILL');
    for (const req of held) req.destroy();
    expect((await get(gatewayB.url, key)).status).toBe(429);
    await eventually(
      async () => ((await get(gatewayB.url, key)).status === 200 ? true : undefined),
      leaseTtlMs + 10_000,
    );
    expect(Date.now() - heldAt).toBeGreaterThanOrEqual(leaseTtlMs - 100);
  }, 60_000);
});

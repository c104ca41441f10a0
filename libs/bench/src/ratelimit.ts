/**
 * Rate limiting: what it costs the gateway (the same GET with RATE_LIMIT on and off), and what one
 * acquisition costs on real Redis, called from the bench process.
 */
import { randomUUID } from 'node:crypto';
import { isDeepStrictEqual } from 'node:util';
import { Redis } from 'ioredis';
import { createRedisLimiter, type LimiterLogger, type LimitPolicy } from '@costgov/ratelimit';
import { measure, progress, type CpuProbe, type LoadSettings } from './load';
import type { Gateway } from './processes';
import { summarizeRateLimit, type LatencyFigures, type LimiterResult, type RateLimitResult } from './report';

/** The gateway's RATE_LIMIT_REDIS_TIMEOUT_MS default (services/gateway/src/config.ts). */
export const gatewayRedisTimeoutMs = 100;

const quiet: LimiterLogger = { debug: () => undefined, info: () => undefined, warn: () => undefined };

/** Fails early, before minutes of other measurements, when Redis is not there. */
export async function checkRedis(url: string): Promise<void> {
  const limiter = createRedisLimiter({ url, logger: quiet });
  try {
    await limiter.ready(3_000);
  } catch {
    throw new Error(
      `Redis is not reachable at BENCH_REDIS_URL (${redacted(url)}); start it or set the variable`,
    );
  } finally {
    await limiter.close();
  }
}

function redacted(url: string): string {
  try {
    const parsed = new URL(url);
    if (parsed.password) parsed.password = '***';
    return parsed.toString();
  } catch {
    return 'an invalid URL';
  }
}

/** The pid of the Redis server (INFO server), so that its CPU can be read when it runs on this machine. */
export async function redisPid(url: string): Promise<number | undefined> {
  const client = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 0 });
  try {
    await client.connect();
    const info = await client.info('server');
    const pid = /process_id:(\d+)/.exec(info)?.[1];
    return pid ? Number(pid) : undefined;
  } catch {
    return undefined;
  } finally {
    client.disconnect();
  }
}

/**
 * The same GET on gateways on the same backends with the same fresh API key: RATE_LIMIT=off, limiting
 * with RATE_LIMIT_REDIS_TIMEOUT_MS as configured, limiting with a timeout long enough that Redis answers
 * every decision, and off again, so that the machine's drift shows next to the cost.
 */
export async function rateLimitCost(options: {
  path: string;
  apiKey: string;
  off: Gateway;
  on: Gateway;
  onRedisOnly: Gateway;
  redisTimeoutMs: number;
  redisOnlyTimeoutMs: number;
  connections: number;
  settings: LoadSettings;
  limits: RateLimitResult['limits'];
  cpu: (gateway: Gateway) => Promise<CpuProbe[]>;
}): Promise<RateLimitResult> {
  const { path, off, on, onRedisOnly, connections, settings } = options;
  const headers = { authorization: `Bearer ${options.apiKey}` };
  const answers = await Promise.all(
    [off, on, onRedisOnly].map(async (gateway) => {
      const response = await fetch(`${gateway.url}${path}`, { headers });
      if (response.status !== 200)
        throw new Error(`GET ${gateway.name}${path} answered ${response.status}: ${await response.text()}`);
      return { body: await response.json(), policy: response.headers.get('ratelimit-policy') ?? '' };
    }),
  );
  if (!answers.every((answer) => isDeepStrictEqual(answer.body, answers[0]!.body)))
    throw new Error('the gateways with and without rate limiting answer differently');
  // The limiting gateways must apply the raised limits (identity's answer is cached once seen).
  for (const [i, gateway] of [on, onRedisOnly].entries()) {
    const policy = answers[i + 1]!.policy;
    if (!policy.includes(`q=${options.limits.requestsPerMinute};`))
      throw new Error(`${gateway.name} does not apply the raised limits: RateLimit-Policy ${policy}`);
  }

  const run = (gateway: Gateway, name: string) =>
    measure({ name, url: `${gateway.url}${path}`, headers, connections }, settings, {
      cpu: () => options.cpu(gateway),
      gatewayMetricsUrl: gateway.metricsUrl,
    });
  const off1 = await run(off, 'gateway RATE_LIMIT=off');
  const onFigures = await run(on, `gateway RATE_LIMIT=on, timeout ${options.redisTimeoutMs} ms`);
  const onRedisOnlyFigures = await run(
    onRedisOnly,
    `gateway RATE_LIMIT=on, timeout ${options.redisOnlyTimeoutMs} ms`,
  );
  const off2 = await run(off, 'gateway RATE_LIMIT=off again');
  return summarizeRateLimit(
    { off1, on: onFigures, onRedisOnly: onRedisOnlyFigures, off2 },
    {
      connections,
      limits: options.limits,
      redisTimeoutMs: options.redisTimeoutMs,
      redisOnlyTimeoutMs: options.redisOnlyTimeoutMs,
    },
  );
}

const percentile = (sorted: number[], p: number) =>
  sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))] ?? Number.NaN;

/**
 * `acquisitions` acquire + release pairs on one key (one credential: every request of a busy client
 * hits the same bucket), `inFlight` at a time; latencies are measured around each call.
 */
async function acquireLoop(
  limiter: ReturnType<typeof createRedisLimiter>,
  key: string,
  policy: LimitPolicy,
  acquisitions: number,
  inFlight: number,
): Promise<LatencyFigures> {
  const acquire: number[] = [];
  const release: number[] = [];
  let started = 0;
  const worker = async () => {
    while (started < acquisitions) {
      started++;
      const t0 = performance.now();
      const { decision, lease } = await limiter.acquire(key, policy);
      const t1 = performance.now();
      if (!decision.allowed || !lease)
        throw new Error(`the limiter refused an acquisition (${decision.reason}); the policy is too small`);
      await lease.release();
      acquire.push(t1 - t0);
      release.push(performance.now() - t1);
    }
  };
  const begin = performance.now();
  await Promise.all(Array.from({ length: inFlight }, worker));
  const seconds = (performance.now() - begin) / 1000;
  acquire.sort((a, b) => a - b);
  release.sort((a, b) => a - b);
  return {
    acquisitions: acquire.length,
    inFlight,
    perSecond: acquire.length / seconds,
    p50Ms: percentile(acquire, 50),
    p99Ms: percentile(acquire, 99),
    maxMs: acquire.at(-1) ?? Number.NaN,
    overGatewayTimeout: acquire.filter((ms) => ms > gatewayRedisTimeoutMs).length,
    releaseP50Ms: percentile(release, 50),
    releaseP99Ms: percentile(release, 99),
  };
}

/**
 * The limiter the gateway uses, called directly: a generous command timeout so that slow calls are
 * measured rather than failed, a key prefix of this run's own, and a short lease TTL so that nothing
 * outlives the bench by more than seconds (buckets expire once refilled).
 */
export async function limiterLatency(options: {
  redisUrl: string;
  acquisitions: number;
  inFlight: number;
}): Promise<LimiterResult> {
  const limiter = createRedisLimiter({
    url: options.redisUrl,
    logger: quiet,
    timeoutMs: 2_000,
    leaseTtlMs: 10_000,
    keyPrefix: `costgov:bench:${randomUUID()}:`,
  });
  try {
    await limiter.ready(3_000);
    const policy: LimitPolicy = {
      name: 'bench',
      capacity: 10_000_000,
      refillPerSecond: 10_000_000 / 60,
      concurrency: 1_000,
    };
    progress('limiter latency: warm-up (500 acquisitions)');
    await acquireLoop(limiter, 'warm-up', policy, 500, 10);
    progress(`limiter latency: ${options.acquisitions} sequential acquisitions`);
    const sequential = await acquireLoop(limiter, 'sequential', policy, options.acquisitions, 1);
    progress(`limiter latency: ${options.acquisitions} acquisitions, ${options.inFlight} in flight`);
    const concurrent = await acquireLoop(
      limiter,
      'concurrent',
      policy,
      options.acquisitions,
      options.inFlight,
    );
    return { gatewayTimeoutMs: gatewayRedisTimeoutMs, sequential, concurrent };
  } finally {
    await limiter.close();
  }
}

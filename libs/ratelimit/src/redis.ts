import { randomUUID } from 'node:crypto';
import { Redis } from 'ioredis';
import { assertValidPolicy, decide, type Acquisition, type LimiterLogger, type RateLimiter } from './limiter';
import { acquireScript, renewScript } from './redis-script';

export interface RedisLimiterOptions {
  url: string;
  logger: LimiterLogger;
  /** Milliseconds a lease lives when its gateway never releases it (crashed, partitioned). */
  leaseTtlMs?: number;
  /** Milliseconds a Redis command may take before the acquire fails (and a fallback answers). */
  timeoutMs?: number;
  keyPrefix?: string;
}

export interface RedisRateLimiter extends RateLimiter {
  /** Resolves once the client is connected; until then every acquire fails at once. */
  ready(timeoutMs?: number): Promise<void>;
}

type AcquireReply = [outcome: number, tokens: string];

interface LimiterClient extends Redis {
  costgovAcquire(
    bucketKey: string,
    leasesKey: string,
    capacity: number,
    refillPerSecond: number,
    concurrency: number,
    leaseTtlMs: number,
    leaseId: string,
  ): Promise<AcquireReply>;
  costgovRenew(leasesKey: string, leaseTtlMs: number, leaseId: string): Promise<number>;
}

const outcomes = { 0: 'rate', 1: 'allowed', 2: 'concurrency' } as const;

/**
 * The shared limiter of every gateway replica. The client never queues: while Redis is down or slow each
 * command fails within `timeoutMs`, and the caller (see createFallbackLimiter) answers from elsewhere.
 */
export function createRedisLimiter({
  url,
  logger,
  leaseTtlMs = 60_000,
  timeoutMs = 5,
  keyPrefix = 'costgov:rl:',
}: RedisLimiterOptions): RedisRateLimiter {
  const client = new Redis(url, {
    enableOfflineQueue: false,
    maxRetriesPerRequest: 0,
    commandTimeout: timeoutMs,
    connectTimeout: 500,
    // Reconnects in the background, backing off to one attempt a second.
    retryStrategy: (attempt) => Math.min(50 * 2 ** attempt, 1_000),
  }) as LimiterClient;
  client.defineCommand('costgovAcquire', { numberOfKeys: 2, lua: acquireScript });
  client.defineCommand('costgovRenew', { numberOfKeys: 1, lua: renewScript });
  // Every failed reconnect emits an error; the fallback logs the outage once, so these stay at debug.
  client.on('error', (err: Error) => logger.debug({ err }, 'rate limiter redis connection error'));
  client.on('ready', () => logger.debug('rate limiter redis connection ready'));

  const release = async (leasesKey: string, leaseId: string) => {
    try {
      await client.zrem(leasesKey, leaseId);
    } catch (err) {
      logger.debug({ err, leasesKey }, 'rate limiter lease not released; it expires on its own');
    }
  };

  return {
    async acquire(key, policy): Promise<Acquisition> {
      assertValidPolicy(policy);
      // The hash tag keeps both keys of one bucket in one Redis Cluster slot, as a script needs.
      const base = `${keyPrefix}{${policy.name}:${key}}`;
      const leasesKey = `${base}:leases`;
      const leaseId = randomUUID();
      let reply: AcquireReply;
      try {
        reply = await client.costgovAcquire(
          `${base}:tokens`,
          leasesKey,
          policy.capacity,
          policy.refillPerSecond,
          policy.concurrency,
          leaseTtlMs,
          leaseId,
        );
      } catch (err) {
        // A timed-out script may still run; removing its lease right after keeps the slot from leaking.
        void release(leasesKey, leaseId);
        const reason = err instanceof Error ? err.message : String(err);
        throw new Error(`rate limiter: Redis did not answer for policy ${policy.name}: ${reason}`, {
          cause: err,
        });
      }
      const outcome = outcomes[reply[0] as keyof typeof outcomes];
      const decision = decide(policy, outcome, Number(reply[1]));
      if (outcome !== 'allowed') return { decision };
      let released = false;
      return {
        decision,
        lease: {
          async release() {
            if (released) return;
            released = true;
            await release(leasesKey, leaseId);
          },
          async renew() {
            if (released) return;
            try {
              await client.costgovRenew(leasesKey, leaseTtlMs, leaseId);
            } catch (err) {
              logger.debug({ err, leasesKey }, 'rate limiter lease not renewed; it keeps its expiry');
            }
          },
        },
      };
    },

    ready(timeoutMs = 5_000) {
      if (client.status === 'ready') return Promise.resolve();
      return new Promise<void>((resolve, reject) => {
        const timer = setTimeout(() => {
          client.off('ready', onReady);
          reject(new Error(`rate limiter: Redis at ${redactedUrl(url)} not ready within ${timeoutMs} ms`));
        }, timeoutMs);
        const onReady = () => {
          clearTimeout(timer);
          resolve();
        };
        client.once('ready', onReady);
      });
    },

    async close() {
      if (client.status === 'ready') {
        await client.quit().catch(() => client.disconnect());
      } else {
        client.disconnect();
      }
    },
  };
}

function redactedUrl(url: string): string {
  try {
    const parsed = new URL(url);
    if (parsed.password) parsed.password = '***';
    return parsed.toString();
  } catch {
    return 'the configured URL';
  }
}

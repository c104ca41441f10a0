import { randomUUID } from 'node:crypto';
import {
  closeRedisClient,
  createRedisClient,
  redactedRedisUrl,
  redisReady,
  type RedisClient,
} from '@costgov/redis';
import { assertValidPolicy, decide, type Acquisition, type LimiterLogger, type RateLimiter } from './limiter';
import { acquireScript, renewScript } from './redis-script';

export interface RedisLimiterOptions {
  url: string;
  /** The URL is a seed of a Redis Cluster (REDIS_CLUSTER=on); a bucket's keys share one slot either way. */
  cluster?: boolean;
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

type LimiterClient = RedisClient & {
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
};

const outcomes = { 0: 'rate', 1: 'allowed', 2: 'concurrency' } as const;

/**
 * The shared limiter of every gateway replica, on one Redis or a Redis Cluster. The client never queues: while Redis is down or slow each
 * command fails within `timeoutMs`, and the caller (see createFallbackLimiter) answers from elsewhere.
 */
export function createRedisLimiter({
  url,
  cluster = false,
  logger,
  leaseTtlMs = 60_000,
  timeoutMs = 5,
  keyPrefix = 'costgov:rl:',
}: RedisLimiterOptions): RedisRateLimiter {
  const client = createRedisClient({
    url,
    cluster,
    timeoutMs,
    logger,
    purpose: 'rate limiter',
  }) as LimiterClient;
  client.defineCommand('costgovAcquire', { numberOfKeys: 2, lua: acquireScript });
  client.defineCommand('costgovRenew', { numberOfKeys: 1, lua: renewScript });

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

    ready(waitMs = 5_000) {
      return redisReady(client, waitMs, `rate limiter: Redis at ${redactedRedisUrl(url)}`);
    },

    close: () => closeRedisClient(client),
  };
}

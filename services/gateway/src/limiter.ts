import type { Logger } from '@costgov/log';
import {
  createFallbackLimiter,
  createMemoryLimiter,
  createRedisLimiter,
  type RateLimiter,
} from '@costgov/ratelimit';
import type { GatewayConfig } from './config';

/**
 * Redis shared by every replica, with a per-process limiter answering while Redis is down or slow; the
 * embedded default (no REDIS_URL) uses the in-memory limiter alone.
 */
export async function createLimiter(
  config: Pick<
    GatewayConfig,
    'REDIS_URL' | 'REDIS_CLUSTER' | 'RATE_LIMIT_REDIS_TIMEOUT_MS' | 'RATE_LIMIT_LEASE_TTL_MS' | 'RATE_LIMIT'
  >,
  logger: Logger,
): Promise<RateLimiter> {
  if (config.RATE_LIMIT === 'off') {
    logger.warn('RATE_LIMIT=off: requests are not limited');
    return unlimited;
  }
  const fallback = createMemoryLimiter({ leaseTtlMs: config.RATE_LIMIT_LEASE_TTL_MS });
  if (!config.REDIS_URL) return fallback;
  const primary = createRedisLimiter({
    url: config.REDIS_URL,
    cluster: config.REDIS_CLUSTER === 'on',
    logger,
    timeoutMs: config.RATE_LIMIT_REDIS_TIMEOUT_MS,
    leaseTtlMs: config.RATE_LIMIT_LEASE_TTL_MS,
  });
  // Without waiting, the first requests would find no connection yet and report a false outage.
  await primary
    .ready(2_000)
    .catch(() => logger.warn('Redis not reachable at start; limiting per process until it is'));
  return createFallbackLimiter({ primary, fallback, logger });
}

/** The no-op limiter for RATE_LIMIT=off (benchmarks, trusted internal deployments): allows everything. */
const unlimited: RateLimiter = {
  async acquire(_key, policy) {
    return {
      decision: { allowed: true, remaining: policy.capacity, resetSeconds: 0, policy },
      lease: { release: async () => undefined, renew: async () => undefined },
    };
  },
  close: async () => undefined,
};

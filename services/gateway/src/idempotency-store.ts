import type { Logger } from '@costgov/log';
import {
  createFallbackIdempotencyStore,
  createMemoryIdempotencyStore,
  createRedisIdempotencyStore,
  type IdempotencyStore,
} from '@costgov/idempotency';
import type { GatewayConfig } from './config';

/**
 * Idempotency keys in Redis, shared by every replica, kept per process while Redis is away (as the rate
 * limits are); the embedded default (no REDIS_URL) keeps them in memory alone.
 */
export async function createIdempotencyStore(
  config: Pick<
    GatewayConfig,
    'REDIS_URL' | 'REDIS_CLUSTER' | 'IDEMPOTENCY_TTL_MS' | 'IDEMPOTENCY_LOCK_TTL_MS'
  >,
  logger: Logger,
): Promise<IdempotencyStore> {
  const ttls = { ttlMs: config.IDEMPOTENCY_TTL_MS, lockTtlMs: config.IDEMPOTENCY_LOCK_TTL_MS };
  const fallback = createMemoryIdempotencyStore(ttls);
  if (!config.REDIS_URL) return fallback;
  const primary = createRedisIdempotencyStore({
    url: config.REDIS_URL,
    cluster: config.REDIS_CLUSTER === 'on',
    logger,
    ...ttls,
  });
  await primary
    .ready(2_000)
    .catch(() => logger.warn('Redis not reachable at start; idempotency keys kept per process until it is'));
  return createFallbackIdempotencyStore({ primary, fallback, logger });
}

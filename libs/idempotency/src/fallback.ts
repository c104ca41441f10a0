import { idempotencyMetrics } from './metrics';
import type { IdempotencyLogger, IdempotencyStore } from './store';

export interface FallbackIdempotencyStoreOptions {
  /** The shared store (Redis); it must bound its own latency, as createRedisIdempotencyStore does. */
  primary: IdempotencyStore;
  /** The per-process store that answers while the primary cannot. */
  fallback: IdempotencyStore;
  logger: IdempotencyLogger;
  /** Milliseconds between attempts to use the primary again during an outage. */
  retryIntervalMs?: number;
  now?: () => number;
}

/**
 * Never fails a request because of Redis, in the rate limiter's spirit: while the primary cannot answer,
 * keys are kept per process. A retry that reaches the same replica is still answered from its first
 * response; one that reaches another replica, or that repeats a request made before the outage, may run
 * again. Refusing every keyed POST (503) would instead stop writes altogether while Redis is away.
 */
export function createFallbackIdempotencyStore({
  primary,
  fallback,
  logger,
  retryIntervalMs = 1_000,
  now = Date.now,
}: FallbackIdempotencyStoreOptions): IdempotencyStore {
  let active = false;
  let nextAttemptMs = 0;
  idempotencyMetrics.fallbackActive.set(0);

  const enterFallback = (err: unknown) => {
    if (active) return;
    active = true;
    idempotencyMetrics.fallbackActive.set(1);
    logger.warn({ err }, 'idempotency keys falling back to per-process storage');
  };

  const leaveFallback = () => {
    if (!active) return;
    active = false;
    idempotencyMetrics.fallbackActive.set(0);
    logger.info('idempotency keys back on Redis');
  };

  return {
    async claim(key, fingerprint) {
      const nowMs = now();
      if (!active || nowMs >= nextAttemptMs) {
        // Claimed before awaiting, so that concurrent requests do not all try a dead primary.
        if (active) nextAttemptMs = nowMs + retryIntervalMs;
        try {
          const claim = await primary.claim(key, fingerprint);
          leaveFallback();
          return claim;
        } catch (err) {
          enterFallback(err);
          nextAttemptMs = now() + retryIntervalMs;
        }
      }
      idempotencyMetrics.fallbackClaims.inc();
      return fallback.claim(key, fingerprint);
    },

    async close() {
      await Promise.all([primary.close(), fallback.close()]);
    },
  };
}

import { assertValidPolicy, type LimiterLogger, type RateLimiter } from './limiter';
import { fallbackMetrics } from './metrics';

export interface FallbackLimiterOptions {
  /** The shared limiter (Redis); it must bound its own latency, as createRedisLimiter does. */
  primary: RateLimiter;
  /** The per-process limiter that answers while the primary cannot. */
  fallback: RateLimiter;
  logger: LimiterLogger;
  /** Called with true when an outage starts and false when the primary answers again. */
  onFallback?: (active: boolean) => void;
  /** Milliseconds between attempts to use the primary again during an outage. */
  retryIntervalMs?: number;
  now?: () => number;
}

/**
 * Never fails a request because of the primary: when it throws, the fallback answers at once, and during
 * the outage only one request every `retryIntervalMs` tries the primary, so a dead Redis costs nothing.
 * Limits are then per process (each replica grants the full budget), which beats refusing or failing.
 */
export function createFallbackLimiter({
  primary,
  fallback,
  logger,
  onFallback,
  retryIntervalMs = 1_000,
  now = Date.now,
}: FallbackLimiterOptions): RateLimiter {
  let active = false;
  let nextAttemptMs = 0;
  fallbackMetrics.active.set(0);

  const enterFallback = (err: unknown) => {
    if (active) return;
    active = true;
    fallbackMetrics.active.set(1);
    logger.warn({ err }, 'rate limiter falling back to per-process limits');
    onFallback?.(true);
  };

  const leaveFallback = () => {
    if (!active) return;
    active = false;
    fallbackMetrics.active.set(0);
    logger.info('rate limiter back on Redis');
    onFallback?.(false);
  };

  return {
    async acquire(key, policy) {
      assertValidPolicy(policy); // an invalid policy is a bug to surface, not an outage to hide
      const nowMs = now();
      if (!active || nowMs >= nextAttemptMs) {
        // Claimed before awaiting, so that concurrent requests do not all try a dead primary.
        if (active) nextAttemptMs = nowMs + retryIntervalMs;
        try {
          const acquisition = await primary.acquire(key, policy);
          leaveFallback();
          return acquisition;
        } catch (err) {
          enterFallback(err);
          nextAttemptMs = now() + retryIntervalMs;
        }
      }
      fallbackMetrics.decisions.inc({ policy: policy.name });
      return fallback.acquire(key, policy);
    },

    async close() {
      await Promise.all([primary.close(), fallback.close()]);
    },
  };
}

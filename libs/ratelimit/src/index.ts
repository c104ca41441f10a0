// Hand-written: no maintained library offers a token bucket plus an expiring-lease concurrency limiter
// as atomic Redis scripts.
export type { Acquisition, Lease, LimitDecision, LimiterLogger, LimitPolicy, RateLimiter } from './limiter';
export { createMemoryLimiter, type MemoryLimiterOptions } from './memory';
export { createRedisLimiter, type RedisLimiterOptions, type RedisRateLimiter } from './redis';
export { createFallbackLimiter, type FallbackLimiterOptions } from './fallback';
export { rateLimitHeaders } from './headers';

import type { RequestHandler } from 'express';
import { DomainError } from '@costgov/errors';
import { rateLimitHeaders, type LimitPolicy, type RateLimiter } from '@costgov/ratelimit';
import type { Principal } from './auth';

/** The credential's limits as a policy: a bucket of a minute's requests refilling evenly, and a concurrency cap. */
export function policyOf(principal: Principal): LimitPolicy {
  const { requestsPerMinute, concurrentRequests } = principal.limits;
  return {
    name: principal.kind === 'scim_token' ? 'scim' : 'default',
    capacity: requestsPerMinute,
    refillPerSecond: requestsPerMinute / 60,
    concurrency: concurrentRequests,
  };
}

/**
 * Per-credential rate limit and concurrency limit. Every answer carries the RateLimit fields; a refusal
 * is 429 with Retry-After. The concurrency slot is held until the response is finished or the client
 * goes away.
 */
export function rateLimit(limiter: RateLimiter): RequestHandler {
  return async (req, res, next) => {
    const { decision, lease } = await limiter.acquire(req.principal.credentialId, policyOf(req.principal));
    for (const [name, value] of Object.entries(rateLimitHeaders(decision))) res.setHeader(name, value);
    if (!decision.allowed) {
      const what = decision.reason === 'concurrency' ? 'Too many requests in flight' : 'Too many requests';
      throw new DomainError(
        'rate_limited',
        `${what} for this credential; retry after ${decision.retryAfterSeconds} s.`,
        [],
        {
          retryAfterSeconds: String(decision.retryAfterSeconds ?? 1),
        },
      );
    }
    let released = false;
    const release = () => {
      if (released) return;
      released = true;
      void lease?.release();
    };
    res.once('finish', release);
    res.once('close', release);
    next();
  };
}

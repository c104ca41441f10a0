import type { RequestHandler, Response } from 'express';
import { DomainError } from '@costgov/errors';
import { rateLimitHeaders, type Lease, type LimitPolicy, type RateLimiter } from '@costgov/ratelimit';
import type { Principal } from './auth';

const policies = new WeakMap<Principal, LimitPolicy>();
const leaseOf = Symbol('lease');
type Leased = Response & { [leaseOf]?: Lease };

/**
 * Gives the response's concurrency slot back once, on finish or close, whichever comes first. One
 * function for every response (`this` is the response), not a closure per request.
 */
function release(this: Leased): void {
  const lease = this[leaseOf];
  if (!lease) return;
  this[leaseOf] = undefined;
  this.removeListener('finish', release);
  this.removeListener('close', release);
  void lease.release();
}

/**
 * Renews the response's concurrency slot every `everyMs` until the response ends, for a request that may
 * outlive one lease TTL (a cost-data upload taking minutes): otherwise its slot would expire while it
 * still runs, and the credential could have one more request in flight than its limit.
 */
export function renewLeaseUntilDone(res: Response, everyMs: number): void {
  const lease = (res as Leased)[leaseOf];
  if (!lease) return;
  const timer = setInterval(() => void lease.renew(), everyMs);
  timer.unref();
  const stop = () => clearInterval(timer);
  res.once('finish', stop);
  res.once('close', stop);
}

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
    const { principal } = req;
    // One policy per cached principal (authentication caches them), not one per request.
    let policy = policies.get(principal);
    if (!policy) policies.set(principal, (policy = policyOf(principal)));
    const { decision, lease } = await limiter.acquire(principal.credentialId, policy);
    const headers = rateLimitHeaders(decision);
    for (const name in headers) res.setHeader(name, headers[name]!);
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
    if (lease) {
      (res as Leased)[leaseOf] = lease;
      res.on('finish', release);
      res.on('close', release);
    }
    next();
  };
}

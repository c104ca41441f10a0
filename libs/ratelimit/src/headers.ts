import type { LimitDecision } from './limiter';

/** A policy name as a Structured Field string (RFC 9651): quoted, with `\` and `"` escaped. */
const sfString = (value: string) => `"${value.replace(/[\\"]/g, (c) => `\\${c}`)}"`;

/**
 * Response fields of draft-ietf-httpapi-ratelimit-headers (IETF httpapi WG), for a 120-token bucket
 * refilling 2 per second with 10 requests in flight:
 *
 *   RateLimit-Policy: "default";q=120;w=60, "concurrency";q=10;qu="concurrent-requests"
 *   RateLimit: "default";r=<tokens left, floored>;t=<seconds until the bucket is full again>
 *   Retry-After: <whole seconds>            (only when refused, RFC 9110)
 *
 * q is the bucket's capacity and w the seconds it takes to refill from empty (capacity / refill rate,
 * rounded up); the policy item is named after LimitPolicy.name ("default", "scim").
 */
export function rateLimitHeaders(decision: LimitDecision): Record<string, string> {
  const { policy } = decision;
  const name = sfString(policy.name);
  const window = Math.ceil(policy.capacity / policy.refillPerSecond);
  const headers: Record<string, string> = {
    'RateLimit-Policy': `${name};q=${policy.capacity};w=${window}, "concurrency";q=${policy.concurrency};qu="concurrent-requests"`,
    RateLimit: `${name};r=${decision.remaining};t=${decision.resetSeconds}`,
  };
  if (!decision.allowed) headers['Retry-After'] = String(decision.retryAfterSeconds ?? 1);
  return headers;
}

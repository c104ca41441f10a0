import type { Logger } from '@costgov/log';

/** One limit applied to a key: a token bucket plus a cap on requests in flight. */
export interface LimitPolicy {
  /** Tokens the bucket holds when full: the largest burst. */
  capacity: number;
  /** Tokens added back per second. */
  refillPerSecond: number;
  /** Requests that may hold a lease at once. */
  concurrency: number;
  /** Shown in the RateLimit headers and part of the storage key, e.g. 'default' or 'scim'. */
  name: string;
}

export interface LimitDecision {
  allowed: boolean;
  /** Why the request was refused: the bucket is empty, or every concurrency slot is taken. */
  reason?: 'rate' | 'concurrency';
  /** Whole tokens left in the bucket after this decision. */
  remaining: number;
  /** Whole seconds until the bucket is full again. */
  resetSeconds: number;
  /** When refused: whole seconds to wait before a retry can succeed. */
  retryAfterSeconds?: number;
  policy: LimitPolicy;
}

/** A concurrency slot held by one request; released when the request ends, or expired by the limiter. */
export interface Lease {
  /** Frees the slot. Idempotent, and never throws: a slot that cannot be freed expires on its own. */
  release(): Promise<void>;
  /**
   * Keeps the slot for another lease TTL from now, for a request that outlives one (a long upload). Does
   * nothing once released or expired, and never throws: a renewal that fails leaves the old expiry.
   */
  renew(): Promise<void>;
}

export interface Acquisition {
  decision: LimitDecision;
  /** Set exactly when the decision allows the request. */
  lease?: Lease;
}

export interface RateLimiter {
  /**
   * Takes one token and one concurrency slot for `key` (a credential id, never a secret). An empty bucket
   * refuses with 'rate' and takes no slot; full slots refuse with 'concurrency' and take no token.
   */
  acquire(key: string, policy: LimitPolicy): Promise<Acquisition>;
  close(): Promise<void>;
}

export type LimiterLogger = Pick<Logger, 'debug' | 'info' | 'warn'>;

export type Outcome = 'allowed' | 'rate' | 'concurrency';

/** Rejects a policy the bucket arithmetic cannot honour, naming the field and value. */
export function assertValidPolicy(policy: LimitPolicy): void {
  const checks: [keyof LimitPolicy, boolean, string][] = [
    ['capacity', Number.isInteger(policy.capacity) && policy.capacity >= 1, 'an integer >= 1'],
    [
      'refillPerSecond',
      Number.isFinite(policy.refillPerSecond) && policy.refillPerSecond > 0,
      'a number > 0',
    ],
    ['concurrency', Number.isInteger(policy.concurrency) && policy.concurrency >= 1, 'an integer >= 1'],
    ['name', typeof policy.name === 'string' && policy.name.length > 0, 'a non-empty string'],
  ];
  for (const [field, ok, expected] of checks) {
    if (!ok) {
      throw new TypeError(
        `rate limit policy ${JSON.stringify(policy.name)}: ${field} is ${String(policy[field])}, expected ${expected}`,
      );
    }
  }
}

/** Tokens in a bucket last left at `tokens` at `lastMs`, refilled up to capacity by `nowMs`. */
export function refilledTokens(policy: LimitPolicy, tokens: number, lastMs: number, nowMs: number): number {
  return Math.min(policy.capacity, tokens + (Math.max(0, nowMs - lastMs) * policy.refillPerSecond) / 1000);
}

/**
 * The decision for an outcome, given the tokens in the bucket after it (already reduced by one when
 * allowed). Shared by every implementation so that headers never depend on where the bucket lives.
 */
export function decide(policy: LimitPolicy, outcome: Outcome, tokens: number): LimitDecision {
  const decision: LimitDecision = {
    allowed: outcome === 'allowed',
    remaining: Math.max(0, Math.floor(tokens)),
    resetSeconds: Math.max(0, Math.ceil((policy.capacity - tokens) / policy.refillPerSecond)),
    policy,
  };
  if (outcome === 'rate') {
    decision.reason = 'rate';
    decision.retryAfterSeconds = Math.max(1, Math.ceil((1 - tokens) / policy.refillPerSecond));
  } else if (outcome === 'concurrency') {
    // Nobody knows when a request in flight will end; one second is the smallest honest hint.
    decision.reason = 'concurrency';
    decision.retryAfterSeconds = 1;
  }
  return decision;
}

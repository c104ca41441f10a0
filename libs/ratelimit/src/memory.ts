import {
  assertValidPolicy,
  decide,
  refilledTokens,
  type Acquisition,
  type LimitPolicy,
  type RateLimiter,
} from './limiter';

export interface MemoryLimiterOptions {
  /** Milliseconds a lease lives when its request never releases it. */
  leaseTtlMs?: number;
  /** The clock, in milliseconds; tests pass their own. */
  now?: () => number;
}

interface Bucket {
  /** The policy the bucket was last used with: it says when the bucket is full again. */
  policy: LimitPolicy;
  tokens: number;
  lastMs: number;
  /** Lease id -> expiry in ms. */
  leases: Map<number, number>;
}

/** How often idle buckets are dropped, so that a process that saw many keys does not keep them all. */
const sweepEveryMs = 60_000;

/**
 * The limiter's semantics within one process: the embedded default, and the fallback while Redis is away.
 * JavaScript runs each acquire to completion, so it is atomic without further care.
 */
export function createMemoryLimiter({
  leaseTtlMs = 60_000,
  now = Date.now,
}: MemoryLimiterOptions = {}): RateLimiter {
  const buckets = new Map<string, Bucket>();
  let nextLeaseId = 0;
  let lastSweepMs = now();

  const expireLeases = (bucket: Bucket, nowMs: number) => {
    for (const [id, expiresMs] of bucket.leases) if (expiresMs <= nowMs) bucket.leases.delete(id);
  };

  const dropIdleBuckets = (nowMs: number) => {
    lastSweepMs = nowMs;
    for (const [storageKey, bucket] of buckets) {
      expireLeases(bucket, nowMs);
      const full =
        refilledTokens(bucket.policy, bucket.tokens, bucket.lastMs, nowMs) >= bucket.policy.capacity;
      if (full && bucket.leases.size === 0) buckets.delete(storageKey);
    }
  };

  return {
    async acquire(key: string, policy: LimitPolicy): Promise<Acquisition> {
      assertValidPolicy(policy);
      const nowMs = now();
      if (nowMs - lastSweepMs >= sweepEveryMs) dropIdleBuckets(nowMs);

      const storageKey = `${policy.name}\u0000${key}`;
      let bucket = buckets.get(storageKey);
      if (!bucket) {
        bucket = { policy, tokens: policy.capacity, lastMs: nowMs, leases: new Map() };
        buckets.set(storageKey, bucket);
      }
      bucket.policy = policy;

      const tokens = refilledTokens(policy, bucket.tokens, bucket.lastMs, nowMs);
      if (tokens < 1) return { decision: decide(policy, 'rate', tokens) };
      expireLeases(bucket, nowMs);
      if (bucket.leases.size >= policy.concurrency)
        return { decision: decide(policy, 'concurrency', tokens) };

      bucket.tokens = tokens - 1;
      bucket.lastMs = nowMs;
      const id = nextLeaseId++;
      const leases = bucket.leases;
      leases.set(id, nowMs + leaseTtlMs);
      let released = false;
      return {
        decision: decide(policy, 'allowed', bucket.tokens),
        lease: {
          async release() {
            if (released) return;
            released = true;
            leases.delete(id);
          },
          async renew() {
            const at = now();
            if (!released && (leases.get(id) ?? -Infinity) > at) leases.set(id, at + leaseTtlMs);
          },
        },
      };
    },
    async close() {
      buckets.clear();
    },
  };
}

import { isDatabaseUnavailable } from '@costgov/db';
import { DomainError } from '@costgov/errors';

/** gRPC UNAVAILABLE and DEADLINE_EXCEEDED, should a raw grpc-js error ever reach a scan. */
const grpcPassingCodes = new Set([14, 4]);

/**
 * Whether a scan failed because something it needs was away for a while (costs, identity or the
 * scanner's Postgres restarting, slow or refusing connections), so running it again soon may succeed.
 * Anything else is the scan's own failure and will not go away by waiting: a domain error (a project or
 * connection gone, invalid data, a refused call) or a bug.
 */
export function isDependencyOutage(error: unknown): boolean {
  if (error instanceof DomainError) {
    // Our RPC clients turn UNAVAILABLE, DEADLINE_EXCEEDED and CANCELLED into service_unavailable.
    return error.code === 'service_unavailable' || error.code === 'rate_limited';
  }
  if (isDatabaseUnavailable(error) || isDatabaseUnavailable((error as { cause?: unknown } | null)?.cause)) {
    return true;
  }
  const code = (error as { code?: unknown } | null | undefined)?.code;
  return typeof code === 'number' && grpcPassingCodes.has(code);
}

export interface RetryPolicy {
  /**
   * How long after its first outage a shard, plan or merge may still be retried (counted for each one
   * alone, so a shard that starts late gets as long as one that starts at once); past it, an outage fails
   * the scan.
   */
  deadlineMs: number;
  /** Wait before the first retry, doubled at each delivery. */
  firstWaitMs: number;
  /** Longest wait between two attempts. */
  maxWaitMs: number;
}

/**
 * When to run a shard, plan or merge again after an outage on its `deliveryCount`-th delivery: a backoff
 * doubling from `firstWaitMs` up to `maxWaitMs`, never past the deadline counted from `since` (its first
 * outage in this series; the last attempt falls on the deadline); undefined once the deadline has passed,
 * which fails the scan.
 */
export function retryWait(
  policy: RetryPolicy,
  attempt: { since: Date; deliveryCount: number; now: Date },
): number | undefined {
  const left = attempt.since.getTime() + policy.deadlineMs - attempt.now.getTime();
  if (left <= 0) return undefined;
  const backoff = policy.firstWaitMs * 2 ** Math.max(0, attempt.deliveryCount - 1);
  return Math.max(0, Math.min(backoff, policy.maxWaitMs, left));
}

/** The message of an error and of its causes, for the log line of a retry (kept out of the API). */
export function reasonOf(error: unknown): string {
  const parts: string[] = [];
  for (let at: unknown = error; at !== undefined && at !== null && parts.length < 4;) {
    parts.push(at instanceof Error ? at.message : String(at));
    at = at instanceof Error ? at.cause : undefined;
  }
  return parts.join(': ');
}

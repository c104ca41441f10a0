const second = 1_000;
const minute = 60 * second;
const hour = 60 * minute;

/**
 * The wait after each failed scheduled attempt: after the 1st 5 s, after the 7th 10 h. The 8th failure
 * fails the delivery, about 28 h after the first attempt (more than the 24 h asked of receivers).
 */
export const retryDelaysMs: readonly number[] = [
  5 * second,
  5 * minute,
  30 * minute,
  2 * hour,
  5 * hour,
  10 * hour,
  10 * hour,
];

/** Scheduled attempts of a delivery in all: the first, then one after each wait. */
export const maxScheduledAttempts = retryDelaysMs.length + 1;

/** Each wait is spread by up to ±10 %, so endpoints that failed together are not retried together. */
export const jitterRatio = 0.1;

/** An endpoint with no success since its first failure this long ago is disabled (reason `failing`). */
export const failingDisableMs = 5 * 24 * hour;

/**
 * When the next scheduled attempt is due after `scheduledAttempts` of them failed, or undefined when
 * the schedule is used up. `random` is in [0, 1), as Math.random.
 */
export function nextAttemptAt(
  scheduledAttempts: number,
  failedAt: Date,
  random: () => number,
): Date | undefined {
  if (scheduledAttempts >= maxScheduledAttempts) return undefined;
  if (scheduledAttempts === 0) return failedAt; // a manual attempt came first; the schedule starts now
  const base = retryDelaysMs[scheduledAttempts - 1]!;
  const jitter = base * jitterRatio * (2 * random() - 1);
  return new Date(failedAt.getTime() + Math.round(base + jitter));
}

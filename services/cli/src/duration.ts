const unitMs = { s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000 } as const;
type Unit = keyof typeof unitMs;

/** Why a duration was refused, phrased to follow commander's "argument '…' is invalid." */
export const durationHint =
  'Expected a positive whole number of minutes, hours or days, like 90m, 12h or 30d.';

export const retryDurationHint =
  'Expected 0 (no retries) or a whole number of seconds, minutes or hours up to 24h, like 30s, 2m or 1h.';

export interface DurationRules {
  /** The units it may be written in; minutes, hours and days unless given. */
  units?: readonly Unit[];
  /** Whether 0 (alone or with a unit) is a duration. */
  zero?: boolean;
}

/** Milliseconds of a duration like `90m`, `12h` or `30d`; undefined when it is not one. */
export function parseDuration(
  text: string,
  { units = ['m', 'h', 'd'], zero = false }: DurationRules = {},
): number | undefined {
  const trimmed = text.trim();
  if (zero && trimmed === '0') return 0;
  const match = new RegExp(`^(\\d+)([${units.join('')}])$`).exec(trimmed);
  if (!match) return undefined;
  const ms = Number(match[1]) * unitMs[match[2] as Unit];
  return (ms > 0 || (zero && ms === 0)) && Number.isSafeInteger(ms) ? ms : undefined;
}

/** A duration as parseDuration reads it back, in the largest unit that holds it whole: `2m`, `90s`, `0`. */
export function formatDuration(ms: number): string {
  if (ms === 0) return '0';
  const unit = (['d', 'h', 'm', 's'] as const).find((u) => ms % unitMs[u] === 0);
  return unit ? `${ms / unitMs[unit]}${unit}` : `${ms / 1000}s`;
}

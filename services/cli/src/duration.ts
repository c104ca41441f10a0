const unitMs = { m: 60_000, h: 3_600_000, d: 86_400_000 } as const;

/** Why a duration was refused, phrased to follow commander's "argument '…' is invalid." */
export const durationHint =
  'Expected a positive whole number of minutes, hours or days, like 90m, 12h or 30d.';

/** Milliseconds of a duration like `90m`, `12h` or `30d`; undefined when it is not one. */
export function parseDuration(text: string): number | undefined {
  const match = /^(\d+)([mhd])$/.exec(text.trim());
  if (!match) return undefined;
  const ms = Number(match[1]) * unitMs[match[2] as keyof typeof unitMs];
  return ms > 0 && Number.isSafeInteger(ms) ? ms : undefined;
}

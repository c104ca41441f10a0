import { timestampDate, type Timestamp } from '@bufbuild/protobuf/wkt';
import { Violations } from '@costgov/errors';

/** Charge days as stored in the rollups: UTC dates `YYYY-MM-DD`, first included, last excluded. */
export interface DayRange {
  firstDay: string;
  endDay: string;
}

const dayMs = 86_400_000;

// The first UTC day starting at or after `at`: a day counts when its start (00:00 UTC) lies in [from, to).
const dayStartingAtOrAfter = (at: Date): string =>
  new Date(Math.ceil(at.getTime() / dayMs) * dayMs).toISOString().slice(0, 10);

/** The days whose start lies in [from, to); both bounds are required and `to` may not precede `from`. */
export function dayRangeOf(from: Timestamp | undefined, to: Timestamp | undefined): DayRange {
  const violations = new Violations();
  violations.check(from !== undefined, 'from', 'is required');
  violations.check(to !== undefined, 'to', 'is required');
  violations.throwIfAny();
  const start = timestampDate(from!);
  const end = timestampDate(to!);
  violations.check(
    Number.isFinite(start.getTime()) && Number.isFinite(end.getTime()) && start <= end,
    'to',
    'must not be before from',
  );
  violations.throwIfAny();
  return { firstDay: dayStartingAtOrAfter(start), endDay: dayStartingAtOrAfter(end) };
}

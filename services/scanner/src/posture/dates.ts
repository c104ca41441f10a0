import { BadRequestError } from '@costgov/errors';

const DAY_MS = 86_400_000;

/** YYYY-MM-DD of a moment, in UTC. */
export const dayOf = (moment: Date): string => moment.toISOString().slice(0, 10);

/** The day `days` after (or before, when negative) a YYYY-MM-DD day. */
export const addDays = (day: string, days: number): string =>
  dayOf(new Date(Date.parse(`${day}T00:00:00Z`) + days * DAY_MS));

/**
 * The day a posture is asked for: today (UTC) when none is given; a malformed, impossible (2026-02-30)
 * or future day is a bad request.
 */
export function postureDay(asked: string, today: string): string {
  if (asked === '') return today;
  if (!/^\d{4}-\d{2}-\d{2}$/.test(asked) || Number.isNaN(Date.parse(`${asked}T00:00:00Z`))) {
    throw new BadRequestError(`date '${asked}' is not a day in the form YYYY-MM-DD.`);
  }
  if (addDays(asked, 0) !== asked) throw new BadRequestError(`date '${asked}' is not a calendar day.`);
  if (asked > today) throw new BadRequestError(`date '${asked}' is in the future (today is ${today} UTC).`);
  return asked;
}

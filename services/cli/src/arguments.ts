import { InvalidArgumentError } from 'commander';
import { durationHint, parseDuration, retryDurationHint } from './duration';

/**
 * Parsers commander runs on option and argument values. A refusal is an InvalidArgumentError, which
 * commander reports as a usage error naming the option and the value.
 */
export function wholeNumber(max: number): (text: string) => number {
  return (text) => {
    const value = Number(text);
    if (!/^\d+$/.test(text) || !Number.isSafeInteger(value) || value > max) {
      const range = max < Number.MAX_SAFE_INTEGER ? ` from 0 to ${max}` : '';
      throw new InvalidArgumentError(`Expected a whole number${range}.`);
    }
    return value;
  };
}

/** A duration in milliseconds. */
export function duration(text: string): number {
  const ms = parseDuration(text);
  if (ms === undefined) throw new InvalidArgumentError(durationHint);
  return ms;
}

/** How long retries may wait in all: 0, or seconds, minutes or hours, in milliseconds. */
export function retryDuration(text: string): number {
  const ms = parseDuration(text, { units: ['s', 'm', 'h'], zero: true });
  if (ms === undefined || ms > 86_400_000) throw new InvalidArgumentError(retryDurationHint);
  return ms;
}

/** A point in time written as an ISO 8601 date or date-time. */
export function instant(text: string): Date {
  const date = new Date(text);
  if (!/^\d{4}-\d{2}-\d{2}/.test(text) || Number.isNaN(date.getTime())) {
    throw new InvalidArgumentError('Expected an ISO 8601 date-time, like 2030-01-31T00:00:00Z.');
  }
  return date;
}

/** `a,b, c` as ['a', 'b', 'c']. */
export const commaList = (text: string): string[] =>
  text
    .split(',')
    .map((item) => item.trim())
    .filter((item) => item !== '');

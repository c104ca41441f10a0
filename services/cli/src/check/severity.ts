import type { components } from '@costgov/client';

export type ViolationSeverity = components['schemas']['ViolationSeverity'];
export type FindingSeverity = components['schemas']['FindingSeverity'];
export type Severity = ViolationSeverity | FindingSeverity;

/**
 * One scale for both kinds, lowest first. Violations rate budget spend (`info` below 80 %, `warning`
 * from 80 %, `critical` from 100 %) and findings rate scan results (`low` to `critical`); `warning`
 * sits between `medium` and `high`, so `--fail-on high` stops on an exceeded budget and on high and
 * critical findings, not on a budget at 80 %.
 */
export const severities = [
  'info',
  'low',
  'medium',
  'warning',
  'high',
  'critical',
] as const satisfies readonly Severity[];

/** Whether a severity the API answered is on the scale this CLI knows (the API's type is a plain string). */
export const isKnownSeverity = (severity: string): severity is (typeof severities)[number] =>
  (severities as readonly string[]).includes(severity);

/**
 * The place of a severity on the scale. One that is not on it (a severity added after this CLI was
 * built) is thrown rather than ranked below everything: the gate must not pass what it cannot judge.
 */
export function rankOf(severity: Severity): number {
  if (!isKnownSeverity(severity))
    throw new Error(
      `unknown severity '${String(severity)}' (this costgov knows ${severities.join(', ')}); update the CLI`,
    );
  return severities.indexOf(severity);
}

export const atLeast = (severity: Severity, floor: Severity): boolean => rankOf(severity) >= rankOf(floor);

/** The SARIF level GitHub shows: high and critical are errors, medium and warning warnings, the rest notes. */
export function sarifLevelOf(severity: Severity): 'error' | 'warning' | 'note' {
  if (atLeast(severity, 'high')) return 'error';
  if (atLeast(severity, 'medium')) return 'warning';
  return 'note';
}

import { BadRequestError, charLength, textProblem, Violations } from '@costgov/errors';

export const maxReasonLength = 500;

/** An enum filter: undefined when not given, 400 naming the allowed values when unknown. */
export function checkEnumFilter<T extends string>(
  field: string,
  value: string | undefined,
  allowed: readonly T[],
): T | undefined {
  if (value === undefined) return undefined;
  if (!(allowed as readonly string[]).includes(value)) {
    throw new BadRequestError(`Unknown ${field} '${value}'.`, [
      { field, message: `must be one of ${allowed.join(', ')}` },
    ]);
  }
  return value as T;
}

/** An id filter is matched as text; text the API refuses is 400, an unknown id simply matches nothing. */
export function checkIdFilter(field: string, value: string | undefined): string | undefined {
  const problem = value === undefined ? undefined : textProblem(value);
  if (problem) {
    throw new BadRequestError(`The ${field} filter is not acceptable text.`, [{ field, message: problem }]);
  }
  return value;
}

/**
 * The requested status and reason, every problem at once (422): `suppressed` needs a reason of
 * 1..500 characters, not all blank; `open` takes none.
 */
export function checkUpdate(input: { status: string; reason?: string }): {
  status: 'suppressed' | 'open';
  reason: string | null;
} {
  const violations = new Violations();
  const { status, reason } = input;
  violations.check(status === 'suppressed' || status === 'open', 'status', 'must be suppressed or open');
  if (status === 'suppressed') {
    if (reason === undefined) violations.add('reason', 'is required to suppress a finding');
    else {
      const problem = textProblem(reason);
      if (problem) violations.add('reason', problem);
      else
        violations.check(
          reason.trim().length >= 1 && charLength(reason) <= maxReasonLength,
          'reason',
          `must be 1 to ${maxReasonLength} characters, not all blank`,
        );
    }
  } else if (status === 'open' && reason !== undefined) {
    violations.add('reason', 'is only accepted with status suppressed');
  }
  violations.throwIfAny();
  return { status: status as 'suppressed' | 'open', reason: status === 'suppressed' ? reason! : null };
}

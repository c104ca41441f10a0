import { charLength, textProblem, Violations } from '@costgov/errors';

export const maxReasonLength = 500;

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

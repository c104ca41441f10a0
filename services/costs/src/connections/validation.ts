import { charLength, textProblem, Violations } from '@costgov/errors';

export const providers = ['aws', 'azure', 'gcp', 'oci', 'other'] as const;
export type Provider = (typeof providers)[number];

export const connectionStatuses = ['active', 'disabled'] as const;
export type ConnectionStatus = (typeof connectionStatuses)[number];

export const maxNameLength = 200;

/**
 * The name trimmed, recording a violation when it is not acceptable text of 1..200 characters (code
 * points). The gateway checks the same through the OpenAPI document; this holds for every other caller.
 */
export function checkName(violations: Violations, name: string): string {
  const trimmed = name.trim();
  const problem = textProblem(trimmed);
  if (problem) violations.add('name', problem);
  else
    violations.check(
      trimmed.length >= 1 && charLength(trimmed) <= maxNameLength,
      'name',
      `must be a name of 1 to ${maxNameLength} characters, not all blank`,
    );
  return trimmed;
}

function checkOneOf<T extends string>(
  violations: Violations,
  field: string,
  value: string,
  allowed: readonly T[],
): T {
  violations.check(
    (allowed as readonly string[]).includes(value),
    field,
    `must be one of ${allowed.join(', ')}`,
  );
  return value as T;
}

export const checkProvider = (violations: Violations, provider: string): Provider =>
  checkOneOf(violations, 'provider', provider, providers);

export const checkStatus = (violations: Violations, status: string): ConnectionStatus =>
  checkOneOf(violations, 'status', status, connectionStatuses);

import { BadRequestError, charLength, textProblem, Violations } from '@costgov/errors';
import { severities, statuses } from './violation';

export const maxNoteLength = 2000;

/**
 * The list's sort fields and the SQL each sorts by. Severity and status sort by rank (info < warning <
 * critical; open < acknowledged < resolved), not alphabetically.
 */
export const sortColumns = {
  created_at: 'v.created_at',
  updated_at: 'v.updated_at',
  severity: `CASE v.severity WHEN 'info' THEN 1 WHEN 'warning' THEN 2 ELSE 3 END`,
  status: `CASE v.status WHEN 'open' THEN 1 WHEN 'acknowledged' THEN 2 ELSE 3 END`,
  current_value: 'v.current_value',
  threshold_value: 'v.threshold_value',
} as const;

export type SortField = keyof typeof sortColumns;
export const sortFields = Object.keys(sortColumns) as SortField[];

export interface Sort {
  field: SortField;
  descending: boolean;
}

/** Newest first unless asked otherwise. */
export function checkSort(sort: { field: string; descending: boolean } | undefined): Sort {
  if (!sort || sort.field === '') return { field: 'created_at', descending: true };
  if (!(sortFields as string[]).includes(sort.field)) {
    throw new BadRequestError(`Unknown sort field '${sort.field}'.`, [
      { field: 'sort', message: `must be one of ${sortFields.join(', ')}, optionally prefixed by -` },
    ]);
  }
  return { field: sort.field as SortField, descending: sort.descending };
}

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

export const checkSeverityFilter = (value: string | undefined) =>
  checkEnumFilter('severity', value, severities);
export const checkStatusFilter = (value: string | undefined) => checkEnumFilter('status', value, statuses);

/** An id filter is matched as text; text the API refuses is 400, an unknown id simply matches nothing. */
export function checkIdFilter(field: string, value: string | undefined): string | undefined {
  const problem = value === undefined ? undefined : textProblem(value);
  if (problem) {
    throw new BadRequestError(`The ${field} filter is not acceptable text.`, [{ field, message: problem }]);
  }
  return value;
}

/** A note is optional; when given it is 1..2000 characters, not all blank, kept as sent. */
export function checkNote(note: string | undefined): string | null {
  if (note === undefined) return null;
  const violations = new Violations();
  const problem = textProblem(note);
  if (problem) violations.add('note', problem);
  else
    violations.check(
      note.trim().length >= 1 && charLength(note) <= maxNoteLength,
      'note',
      `must be 1 to ${maxNoteLength} characters, not all blank`,
    );
  violations.throwIfAny();
  return note;
}

import { charLength, textProblem, Violations } from '@costgov/errors';

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

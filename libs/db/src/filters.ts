import { BadRequestError, textProblem } from '@costgov/errors';

/** A list's order: a field of its own and a direction. */
export interface Sort<Field extends string> {
  field: Field;
  descending: boolean;
}

/** An enum filter: undefined when not given, 400 naming the allowed values when unknown. */
export function enumFilter<T extends string>(
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

/**
 * An id (or other text) filter is matched as text: text the API refuses is 400, an unknown id simply
 * matches nothing.
 */
export function textFilter(field: string, value: string | undefined): string | undefined {
  const problem = value === undefined ? undefined : textProblem(value);
  if (problem) {
    throw new BadRequestError(`The ${field} filter is not acceptable text.`, [{ field, message: problem }]);
  }
  return value;
}

/** The requested order, `fallback` when none is given (an empty field), 400 naming the fields when unknown. */
export function sortOf<Field extends string>(
  sort: { field: string; descending: boolean } | undefined,
  fields: readonly Field[],
  fallback: Sort<Field>,
): Sort<Field> {
  if (!sort || sort.field === '') return fallback;
  if (!(fields as readonly string[]).includes(sort.field)) {
    throw new BadRequestError(`Unknown sort field '${sort.field}'.`, [
      { field: 'sort', message: `must be one of ${fields.join(', ')}, optionally prefixed by -` },
    ]);
  }
  return { field: sort.field as Field, descending: sort.descending };
}

import { describe, expect, it } from 'vitest';
import { BadRequestError } from '@costgov/errors';
import { enumFilter, sortOf, textFilter } from './filters';

const statuses = ['open', 'acknowledged', 'resolved'] as const;
const fields = ['created_at', 'amount'] as const;
const newestFirst = { field: 'created_at', descending: true } as const;

function refusal(run: () => unknown): BadRequestError {
  try {
    run();
  } catch (error) {
    expect(error).toBeInstanceOf(BadRequestError);
    return error as BadRequestError;
  }
  throw new Error('expected a refusal');
}

describe('enumFilter', () => {
  it.each([
    { value: undefined, kept: undefined },
    { value: 'open', kept: 'open' },
    { value: 'resolved', kept: 'resolved' },
  ])('keeps $value', ({ value, kept }) => {
    expect(enumFilter('status', value, statuses)).toBe(kept);
  });

  it.each(['', 'Open', 'closed', 'open '])(
    "refuses '%s', naming the field and the allowed values",
    (value) => {
      const error = refusal(() => enumFilter('status', value, statuses));
      expect(error.message).toBe(`Unknown status '${value}'.`);
      expect(error.details).toEqual([
        { field: 'status', message: 'must be one of open, acknowledged, resolved' },
      ]);
    },
  );
});

describe('textFilter', () => {
  it.each([undefined, '', 'prj_1', 'anything at all, even ünïcödé 🙂', 'tab\tand\nnewline'])(
    'keeps %j (an unknown id matches nothing)',
    (value) => {
      expect(textFilter('project_id', value)).toBe(value);
    },
  );

  it.each([
    { value: 'a\u0000b', problem: 'must not contain NUL characters' },
    { value: 'a\u0007b', problem: 'must not contain control character U+0007' },
    { value: 'a\ud800b', problem: 'must be valid Unicode (UTF-8)' },
  ])('refuses $problem', ({ value, problem }) => {
    const error = refusal(() => textFilter('project_id', value));
    expect(error.message).toBe('The project_id filter is not acceptable text.');
    expect(error.details).toEqual([{ field: 'project_id', message: problem }]);
  });
});

describe('sortOf', () => {
  it.each([
    { name: 'none', sort: undefined, order: newestFirst },
    {
      name: 'an empty field (descending ignored)',
      sort: { field: '', descending: false },
      order: newestFirst,
    },
    {
      name: 'a field ascending',
      sort: { field: 'amount', descending: false },
      order: { field: 'amount', descending: false },
    },
    {
      name: 'a field descending',
      sort: { field: 'created_at', descending: true },
      order: { field: 'created_at', descending: true },
    },
  ])('$name', ({ sort, order }) => {
    expect(sortOf(sort, fields, newestFirst)).toEqual(order);
  });

  it.each(['message', 'Amount', '-amount'])("refuses '%s', naming the sortable fields", (field) => {
    const error = refusal(() => sortOf({ field, descending: false }, fields, newestFirst));
    expect(error.message).toBe(`Unknown sort field '${field}'.`);
    expect(error.details).toEqual([
      { field: 'sort', message: 'must be one of created_at, amount, optionally prefixed by -' },
    ]);
  });
});

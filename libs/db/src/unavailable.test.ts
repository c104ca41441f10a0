import { describe, expect, it } from 'vitest';
import { UnavailableError } from '@costgov/errors';
import { isDatabaseUnavailable, unavailableOr } from './unavailable';

const withCode = (code: string, message = 'x') => Object.assign(new Error(message), { code });

describe('isDatabaseUnavailable', () => {
  it.each([
    ['admin shutdown (57P01)', withCode('57P01'), true],
    ['crash shutdown (57P02)', withCode('57P02'), true],
    ['starting up (57P03)', withCode('57P03'), true],
    ['too many connections (53300)', withCode('53300'), true],
    ['connection failure (08006)', withCode('08006'), true],
    ['refused', withCode('ECONNREFUSED'), true],
    ['reset', withCode('ECONNRESET'), true],
    ['timed out', withCode('ETIMEDOUT'), true],
    ['refused on every address', new AggregateError([withCode('ECONNREFUSED')], ''), true],
    ['terminated', new Error('Connection terminated unexpectedly'), true],
    ['pool wait', new Error('timeout exceeded when trying to connect'), true],
    ['broken client', new Error('Client has encountered a connection error and is not queryable'), true],
    ['unique violation (23505)', withCode('23505'), false],
    ['syntax error (42601)', withCode('42601'), false],
    ['serialization failure (40001)', withCode('40001'), false],
    ['a plain error', new Error('boom'), false],
    ['not an error', 'Connection terminated', false],
  ])('%s', (_name, error, expected) => {
    expect(isDatabaseUnavailable(error)).toBe(expected);
  });
});

describe('unavailableOr', () => {
  it('turns an outage into UnavailableError carrying the driver error as cause', () => {
    const cause = withCode('57P01', 'terminating connection due to administrator command');
    const error = unavailableOr(cause);
    expect(error).toBeInstanceOf(UnavailableError);
    expect(error).toMatchObject({ code: 'service_unavailable', cause });
    expect((error as Error).message).not.toContain('administrator'); // driver text stays out of responses
  });

  it('passes other errors through unchanged', () => {
    const error = withCode('23505');
    expect(unavailableOr(error)).toBe(error);
  });
});

import { describe, expect, it } from 'vitest';
import {
  BadRequestError,
  ConflictError,
  DomainError,
  ForbiddenError,
  NotFoundError,
  UnauthenticatedError,
  UnavailableError,
  ValidationError,
} from '@costgov/errors';
import { toDomainError } from '@costgov/rpc';
import { isDependencyOutage, reasonOf, retryWait } from './retry';

/** gRPC status codes. */
const status = { CANCELLED: 1, DEADLINE_EXCEEDED: 4, NOT_FOUND: 5, INTERNAL: 13, UNAVAILABLE: 14 } as const;
/** A failed call in grpc-js's ServiceError shape, before our client maps it. */
const grpcError = (code: number, details = 'boom') =>
  Object.assign(new Error(`${code} ${details}`), { code, details, metadata: undefined });
/** A node-postgres error with a SQLSTATE or a socket code. */
const pgError = (code: string, message = 'pg error') => Object.assign(new Error(message), { code });
const withCause = (error: Error, cause: unknown) => Object.assign(error, { cause });

describe('isDependencyOutage: which failures are retried and which fail the scan', () => {
  const retried = (name: string, error: unknown) => [`${name}: retried`, error, true] as const;
  const failed = (name: string, error: unknown) => [`${name}: fails the scan`, error, false] as const;
  it.for([
    // A service the scan reads from is away or slow: as our RPC client reports it.
    retried('UnavailableError (costs, identity or budgets down)', new UnavailableError()),
    retried('gRPC UNAVAILABLE through the client', toDomainError(grpcError(status.UNAVAILABLE))),
    retried('gRPC DEADLINE_EXCEEDED through the client', toDomainError(grpcError(status.DEADLINE_EXCEEDED))),
    retried('gRPC CANCELLED through the client', toDomainError(grpcError(status.CANCELLED))),
    retried('a raw gRPC UNAVAILABLE', grpcError(status.UNAVAILABLE)),
    retried('a raw gRPC DEADLINE_EXCEEDED', grpcError(status.DEADLINE_EXCEEDED)),
    retried('a rate-limited call', new DomainError('rate_limited', 'slow down')),
    // The scanner's own Postgres away (writing the findings, claiming the scan).
    retried('Postgres restarting (57P01 admin_shutdown)', pgError('57P01')),
    retried('Postgres starting up (57P03)', pgError('57P03')),
    retried('Postgres refusing connections', pgError('ECONNREFUSED', 'connect ECONNREFUSED 127.0.0.1:5432')),
    retried('a lost connection (node-postgres)', new Error('Connection terminated unexpectedly')),
    retried('an outage wrapped as a cause', withCause(new Error('query failed'), pgError('57P01'))),
    // The scan's own failure: waiting will not change it.
    failed('the project or connection is gone', new NotFoundError('Connection', 'con_1')),
    failed('invalid data', new ValidationError([{ field: 'connection_ids', message: 'too many' }])),
    failed('a refused request', new BadRequestError('bad window')),
    failed('a conflict', new ConflictError('archived')),
    failed('a credential refused', new UnauthenticatedError()),
    failed('a forbidden call', new ForbiddenError()),
    failed('an internal error of the called service', toDomainError(grpcError(status.INTERNAL))),
    failed('a gRPC NOT_FOUND', grpcError(status.NOT_FOUND)),
    failed('a bug in a rule', new TypeError("Cannot read properties of undefined (reading 'tags')")),
    failed('a SQL error in the scanner', pgError('23505', 'duplicate key value')),
    failed('a thrown string', 'cost data unreadable'),
    failed('undefined', undefined),
    failed('null', null),
  ])('%s', ([, error, expected]) => {
    expect(isDependencyOutage(error)).toBe(expected);
  });
});

describe('retryWait: when a scan is tried again, and when it gives up', () => {
  const policy = { deadlineMs: 90_000, firstWaitMs: 1_000, maxWaitMs: 30_000 };
  const since = new Date('2026-01-01T00:00:00Z');
  const after = (ms: number) => new Date(since.getTime() + ms);

  it.for([
    { deliveryCount: 1, elapsedMs: 100, wait: 1_000 },
    { deliveryCount: 2, elapsedMs: 1_200, wait: 2_000 },
    { deliveryCount: 3, elapsedMs: 3_300, wait: 4_000 },
    { deliveryCount: 5, elapsedMs: 15_000, wait: 16_000 },
    // Capped: never a longer wait than maxWaitMs, however many deliveries.
    { deliveryCount: 6, elapsedMs: 31_000, wait: 30_000 },
    { deliveryCount: 40, elapsedMs: 40_000, wait: 30_000 },
    // The last attempt falls on the deadline rather than after it.
    { deliveryCount: 7, elapsedMs: 80_000, wait: 10_000 },
    { deliveryCount: 2, elapsedMs: 89_999, wait: 1 },
    // Past the deadline (or on it): no more retries, the scan fails.
    { deliveryCount: 8, elapsedMs: 90_000, wait: undefined },
    { deliveryCount: 1, elapsedMs: 200_000, wait: undefined },
  ])(
    'delivery $deliveryCount, $elapsedMs ms after the first outage: $wait',
    ({ deliveryCount, elapsedMs, wait }) => {
      expect(retryWait(policy, { since, deliveryCount, now: after(elapsedMs) })).toBe(wait);
    },
  );

  it('never retries with a deadline of 0', () => {
    expect(retryWait({ ...policy, deadlineMs: 0 }, { since, deliveryCount: 1, now: since })).toBe(undefined);
  });
});

describe('reasonOf: what the retry log line says', () => {
  it.for([
    ['an error', new Error('costs is down'), 'costs is down'],
    [
      'an error and its causes',
      withCause(new UnavailableError(), grpcError(status.UNAVAILABLE, 'connect ECONNREFUSED')),
      'A backend service is unavailable; retry shortly.: 14 connect ECONNREFUSED',
    ],
    ['a thrown string', 'gone', 'gone'],
  ] as const)('%s', ([, error, reason]) => {
    expect(reasonOf(error)).toBe(reason);
  });
});

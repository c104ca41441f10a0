import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Metadata, status as Status, type ServiceError } from '@grpc/grpc-js';
import { fromBinary } from '@bufbuild/protobuf';
import { anyUnpack } from '@bufbuild/protobuf/wkt';
import { budgets, rpcErrors, rpcStatus } from '@costgov/contracts';
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
import { createRpcClient, type RpcClient } from '../src/client';
import { toDomainError, toGrpcStatus } from '../src/errors';
import { startProjectsServer, type ProjectsServer } from './fixture';

const domainErrors: Array<[DomainError, Status]> = [
  [
    new BadRequestError('Unknown sort field.', [
      { field: 'sort', message: 'must be one of name, created_at' },
    ]),
    Status.INVALID_ARGUMENT,
  ],
  [
    new ValidationError([
      { field: 'name', message: 'is required' },
      { field: 'amount', message: 'must be > 0' },
    ]),
    Status.INVALID_ARGUMENT,
  ],
  [new NotFoundError('Project', 'prj_missing'), Status.NOT_FOUND],
  [new ConflictError('A user named ada exists.', [], { scimType: 'uniqueness' }), Status.FAILED_PRECONDITION],
  [
    new ConflictError('A project named Web already exists.', [{ field: 'name', message: 'is taken' }]),
    Status.FAILED_PRECONDITION,
  ],
  [new UnauthenticatedError(), Status.UNAUTHENTICATED],
  [new ForbiddenError('Needs guard:write.'), Status.PERMISSION_DENIED],
  [new DomainError('rate_limited', 'Slow down.', [], { retryAfterSeconds: '3' }), Status.RESOURCE_EXHAUSTED],
  [new UnavailableError('The ledger database is down.'), Status.UNAVAILABLE],
  [new DomainError('internal_error', 'Ledger out of balance.'), Status.INTERNAL],
];

const label = ([error]: [DomainError, Status]) => `${error.name} (${error.code})`;

const serviceError = (code: Status, details: string): ServiceError =>
  Object.assign(new Error(`${code} ${Status[code]}: ${details}`), {
    code,
    details,
    metadata: new Metadata(),
  });

describe('domain errors as gRPC statuses', () => {
  it.each(domainErrors.map((row) => [label(row), ...row] as const))('%s answers %s', (_, error, code) => {
    const status = toGrpcStatus(error);
    expect(Status[status.code]).toBe(Status[code]);
    expect(status.details).toBe(error.message);

    const [bytes] = status.metadata.get('grpc-status-details-bin');
    const rich = fromBinary(rpcStatus.StatusSchema, bytes as Buffer);
    expect(rich).toMatchObject({ code, message: error.message });
    const infos = rich.details.map((any) => anyUnpack(any, rpcErrors.ErrorInfoSchema)).filter(Boolean);
    expect(infos).toMatchObject([{ reason: error.code, domain: 'costgov' }]);
    const badRequest = rich.details.map((any) => anyUnpack(any, rpcErrors.BadRequestSchema)).find(Boolean);
    expect(
      badRequest?.fieldViolations.map(({ field, description }) => ({ field, message: description })) ?? [],
    ).toEqual(error.details);
  });

  it('hides anything that is not a DomainError behind a generic INTERNAL', () => {
    const status = toGrpcStatus(new TypeError('secret connection string postgres://u:p@db'));
    expect(status.code).toBe(Status.INTERNAL);
    expect(status.details).toBe('An internal error occurred.');
    expect(status.metadata.get('grpc-status-details-bin')[0]!.toString()).not.toContain('secret');
  });
});

describe('gRPC statuses without our details', () => {
  it.each([
    [Status.UNAVAILABLE, UnavailableError, 'service_unavailable'],
    [Status.DEADLINE_EXCEEDED, UnavailableError, 'service_unavailable'],
    [Status.CANCELLED, UnavailableError, 'service_unavailable'],
    [Status.NOT_FOUND, NotFoundError, 'not_found'],
    [Status.ALREADY_EXISTS, ConflictError, 'conflict'],
    [Status.INVALID_ARGUMENT, BadRequestError, 'bad_request'],
    [Status.RESOURCE_EXHAUSTED, DomainError, 'internal_error'],
    [Status.UNIMPLEMENTED, DomainError, 'internal_error'],
  ] as const)('%s becomes %o with code %s', (code, errorClass, domainCode) => {
    const error = toDomainError(serviceError(code, 'connect ECONNREFUSED 10.0.0.7:50051'));
    expect(error).toBeInstanceOf(errorClass);
    expect(error.code).toBe(domainCode);
    expect(error.cause).toBeInstanceOf(Error);
  });

  it('keeps transport messages out of unavailable and internal errors', () => {
    expect(
      toDomainError(serviceError(Status.UNAVAILABLE, 'connect ECONNREFUSED 10.0.0.7:50051')).message,
    ).toBe(new UnavailableError().message);
    expect(toDomainError(serviceError(Status.INTERNAL, 'Failed to parse server response')).message).toBe(
      'An internal error occurred.',
    );
  });
});

describe('domain errors across the wire', () => {
  let backend: ProjectsServer;
  let client: RpcClient<typeof budgets.ProjectsService>;
  beforeAll(async () => {
    backend = await startProjectsServer();
    client = createRpcClient(budgets.ProjectsService, backend.address);
  });
  afterAll(async () => {
    client.close();
    await backend.server.shutdown(0);
  });

  it.each(domainErrors.map((row) => [label(row), row[0]] as const))(
    '%s arrives as the same class, code, message and details',
    async (_, thrown) => {
      backend.handlers.getProject = async () => {
        throw thrown;
      };
      const error = await client.getProject({ id: 'prj_1' }).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(thrown.constructor);
      expect(error).toMatchObject({ name: thrown.name, code: thrown.code, message: thrown.message });
      expect((error as DomainError).details).toEqual(thrown.details);
      expect((error as DomainError).meta).toEqual(thrown.meta);
    },
  );

  it('gives a bare DomainError the class of its code, keeping message and details', async () => {
    const details = [{ field: 'scope', message: 'guard:write is missing' }];
    backend.handlers.getProject = async () => {
      throw new DomainError('forbidden', 'Not with this key.', details);
    };
    const error = await client.getProject({ id: 'prj_1' }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ForbiddenError);
    expect(error).toMatchObject({
      name: 'ForbiddenError',
      code: 'forbidden',
      message: 'Not with this key.',
      details,
    });
  });

  it('turns a thrown Error into internal_error with a generic message, logging the stack', async () => {
    backend.handlers.getProject = async () => {
      throw new Error('secret: password=hunter2');
    };
    const error = await client.getProject({ id: 'prj_1' }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(DomainError);
    expect(error).toMatchObject({
      code: 'internal_error',
      message: 'An internal error occurred.',
      details: [],
    });
    expect(JSON.stringify(error, Object.getOwnPropertyNames(error))).not.toContain('hunter2');

    const [fields] = backend.logs.error.at(-1) as [{ err: Error; method: string }];
    expect(fields.method).toBe('/costgov.budgets.v1.ProjectsService/GetProject');
    expect(fields.err.stack).toContain('secret: password=hunter2');
  });
});

import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import * as grpc from '@grpc/grpc-js';
import { create, toBinary } from '@bufbuild/protobuf';
import { budgets, rpcErrors, rpcStatus } from '@costgov/contracts';
import { BadRequestError, DomainError, NotFoundError, UnavailableError } from '@costgov/errors';
import { createRpcClient, type RpcClient } from '../src/client';
import type { CallContext } from '../src/context';
import { grpcDefinitionOf } from '../src/definition';
import { toDomainError } from '../src/errors';
import { recordingLogger, startProjectsServer, type ProjectsServer } from './fixture';
import { createRpcServer } from '../src/server';

const { ProjectsService } = budgets;
const loneSurrogate = '\ud83d'; // half of 😀, as a parser that cuts a string by UTF-16 units leaves it

// Anything that escapes a call ends up here; vitest would also fail the run, this names the test.
const escaped: unknown[] = [];
const recordEscape = (error: unknown) => void escaped.push(error);
beforeAll(() => {
  process.on('uncaughtException', recordEscape);
  process.on('unhandledRejection', recordEscape);
});
afterEach(() => void escaped.splice(0));
afterAll(() => {
  process.off('uncaughtException', recordEscape);
  process.off('unhandledRejection', recordEscape);
});

let backend: ProjectsServer;
let client: RpcClient<typeof ProjectsService>;
beforeAll(async () => {
  backend = await startProjectsServer();
  client = createRpcClient(ProjectsService, backend.address, { deadlineMs: 2_000 });
});
afterAll(async () => {
  client.close();
  await backend.server.shutdown(0);
});

/** The call's outcome, then proof that the server still answers. */
async function callThenCheckAlive(): Promise<unknown> {
  const outcome = await client.getProject({ id: 'prj_1' }).catch((error: unknown) => error);
  backend.handlers.listProjects = async () => ({ projects: [{ id: 'prj_alive' }] });
  await expect(client.listProjects({})).resolves.toMatchObject({ projects: [{ id: 'prj_alive' }] });
  expect(escaped).toEqual([]);
  return outcome;
}

describe('a handler failure never ends the server', () => {
  it('bounds a huge message and many long violations so the status still fits the headers', async () => {
    const huge = '😀'.repeat(100_000);
    backend.handlers.getProject = async () => {
      throw new BadRequestError(
        `Unexpected '${huge}'.`,
        Array.from({ length: 1_000 }, (_, i) => ({ field: `f${i}${huge}`, message: huge })),
      );
    };
    const error = await callThenCheckAlive();
    expect(error).toBeInstanceOf(BadRequestError);
    const { message, details } = error as BadRequestError;
    expect(message.startsWith("Unexpected '😀😀")).toBe(true);
    expect(message.endsWith('…')).toBe(true);
    expect(details.length).toBeGreaterThan(0);
    expect(details.length).toBeLessThan(1_000);
    expect(JSON.stringify(details).length).toBeLessThan(64 * 1024);
  });

  it('answers a DomainError whose message has a lone surrogate, with the surrogate replaced', async () => {
    backend.handlers.getProject = async () => {
      throw new BadRequestError(`Unexpected character '${loneSurrogate}' at 0.`);
    };
    const error = await callThenCheckAlive();
    expect(error).toBeInstanceOf(BadRequestError);
    expect((error as Error).message).toBe(`Unexpected character '\ufffd' at 0.`);
  });

  it('keeps field violations and meta encodable too', async () => {
    backend.handlers.getProject = async () => {
      throw new BadRequestError(
        'Bad filter.',
        [{ field: `filter${loneSurrogate}`, message: `near '${loneSurrogate}'` }],
        { scimType: `invalid${loneSurrogate}` },
      );
    };
    const error = (await callThenCheckAlive()) as DomainError;
    expect(error).toBeInstanceOf(BadRequestError);
    expect(error.details).toEqual([{ field: 'filter\ufffd', message: "near '\ufffd'" }]);
    expect(error.meta).toEqual({ scimType: 'invalid\ufffd' });
  });

  it.each([
    ['a string', 'boom'],
    ['undefined', undefined],
    ['null', null],
    ['an object that looks like a gRPC status', { code: 5, details: 'secret' }],
    ['an Error with a lone surrogate', new Error(`bad ${loneSurrogate}`)],
  ])('turns a thrown %s into internal_error', async (_, thrown) => {
    backend.handlers.getProject = async () => {
      throw thrown;
    };
    const error = await callThenCheckAlive();
    expect(error).toBeInstanceOf(DomainError);
    expect(error).toMatchObject({ code: 'internal_error', message: 'An internal error occurred.' });
  });

  it('turns a handler that throws synchronously into internal_error', async () => {
    backend.handlers.getProject = (() => {
      throw new TypeError('not async');
    }) as never;
    const error = await callThenCheckAlive();
    expect(error).toMatchObject({ code: 'internal_error' });
  });

  it('turns a response that cannot be encoded into internal_error', async () => {
    backend.handlers.getProject = async () => ({ id: 'prj_1', createdAt: 'yesterday' }) as never;
    const error = await callThenCheckAlive();
    expect(error).toMatchObject({ code: 'internal_error' });
  });

  it('survives a call hook that throws, and still answers the call', async () => {
    const { logger } = recordingLogger();
    const server = createRpcServer({
      logger,
      onCall: () => {
        throw new Error('metrics registry broken');
      },
    });
    server.add(ProjectsService, {
      createProject: async () => ({}),
      getProject: async (request) => ({ id: request.id }),
      listProjects: async () => ({}),
      updateProject: async () => ({}),
      deleteProject: async () => ({}),
    });
    const port = await server.listen('127.0.0.1:0');
    const own = createRpcClient(ProjectsService, `127.0.0.1:${port}`);
    try {
      await expect(own.getProject({ id: 'prj_1' })).resolves.toMatchObject({ id: 'prj_1' });
      await expect(own.getProject({ id: 'prj_2' })).resolves.toMatchObject({ id: 'prj_2' });
      expect(escaped).toEqual([]);
    } finally {
      own.close();
      await server.shutdown(0);
    }
  });
});

describe('call context that is not plain ASCII', () => {
  it('travels, made well-formed, instead of failing the call', async () => {
    let seen: CallContext | undefined;
    backend.handlers.getProject = async (request, ctx) => {
      seen = ctx;
      return { id: request.id };
    };
    await client.getProject(
      { id: 'prj_1' },
      { requestId: `req-ü-😀-${loneSurrogate}`, teamId: 'team 100%', actor: 'key_1' },
    );
    expect(seen).toMatchObject({ requestId: 'req-ü-😀-\ufffd', teamId: 'team 100%', actor: 'key_1' });
  });
});

describe('a client never throws, whatever the server answers', () => {
  let raw: grpc.Server;
  let rawClient: RpcClient<typeof ProjectsService>;
  let answer: grpc.StatusObject;

  beforeAll(async () => {
    raw = new grpc.Server();
    const reply: grpc.handleUnaryCall<unknown, unknown> = (_call, callback) => callback(answer);
    raw.addService(grpcDefinitionOf(ProjectsService), {
      getProject: reply,
      createProject: reply,
      listProjects: reply,
      updateProject: reply,
      deleteProject: reply,
    });
    const port = await new Promise<number>((resolve, reject) =>
      raw.bindAsync('127.0.0.1:0', grpc.ServerCredentials.createInsecure(), (error, bound) =>
        error ? reject(error) : resolve(bound),
      ),
    );
    rawClient = createRpcClient(ProjectsService, `127.0.0.1:${port}`);
  });
  afterAll(() => {
    rawClient.close();
    raw.forceShutdown();
  });

  const withDetails = (bytes: Uint8Array) => {
    const metadata = new grpc.Metadata();
    metadata.set('grpc-status-details-bin', Buffer.from(bytes));
    return metadata;
  };
  const corruptAny = toBinary(
    rpcStatus.StatusSchema,
    create(rpcStatus.StatusSchema, {
      code: grpc.status.NOT_FOUND,
      message: 'x',
      details: [
        {
          typeUrl: `type.googleapis.com/${rpcErrors.ErrorInfoSchema.typeName}`,
          value: new Uint8Array([0xff, 0xff, 0xff]),
        },
      ],
    }),
  );

  it.each([
    ['a details trailer that is not a Status', withDetails(new Uint8Array([0xff, 0x01])), NotFoundError],
    ['an ErrorInfo whose bytes do not parse', withDetails(corruptAny), NotFoundError],
  ])('rejects with a DomainError on %s', async (_, metadata, expected) => {
    answer = { code: grpc.status.NOT_FOUND, details: 'gone', metadata };
    const error = await rawClient.getProject({ id: 'prj_1' }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(expected);
    expect(escaped).toEqual([]);
  });

  it('turns an unknown status code into internal_error', async () => {
    answer = { code: 99 as grpc.status, details: 'odd', metadata: new grpc.Metadata() };
    const error = await rawClient.getProject({ id: 'prj_1' }).catch((e: unknown) => e);
    expect(error).toMatchObject({ code: 'internal_error' });
  });

  it('rejects with a DomainError when the request cannot be encoded', async () => {
    const error = await client
      .createProject({ name: 'x', approvalRules: { approvers: 'not-a-list' } } as never)
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(DomainError);
    expect(escaped).toEqual([]);
  });

  it('rejects with a DomainError when called after close()', async () => {
    const closed = createRpcClient(ProjectsService, backend.address);
    closed.close();
    const error = await closed.getProject({ id: 'prj_1' }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(DomainError);
  });

  it('maps what is not a ServiceError to internal_error without throwing', () => {
    for (const value of [undefined, null, 'x', 42, { code: 'x' }, Object.create(null)]) {
      expect(toDomainError(value)).toMatchObject({ code: 'internal_error' });
    }
    expect(toDomainError(new UnavailableError())).toBeInstanceOf(UnavailableError);
  });
});

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { DescService } from '@bufbuild/protobuf';
import { timestampDate, timestampFromDate } from '@bufbuild/protobuf/wkt';
import { budgets } from '@costgov/contracts';
import { UnavailableError } from '@costgov/errors';
import { freePort } from '@costgov/testing';
import { createRpcClient, type RpcClient } from '../src/client';
import type { CallContext } from '../src/context';
import { startProjectsServer, recordingLogger, type ProjectsServer } from './fixture';
import { checkHealth } from '../src/health';
import { createRpcServer } from '../src/server';

const { ProjectsService } = budgets;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

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

describe('messages', () => {
  it('round-trip nested, repeated and optional fields and Timestamps', async () => {
    const createdAt = new Date('2025-01-02T03:04:05.678Z');
    backend.handlers.createProject = async (request) => ({
      id: 'prj_1',
      name: request.name,
      status: 'active',
      connectionIds: request.connectionIds,
      createdAt: timestampFromDate(createdAt),
      approvalRules: request.approvalRules,
      budgets: [{ id: 'bdg_1', amount: 1234.5, currency: 'EUR', percentageUsed: 99.9 }],
    });
    const project = await client.createProject({
      name: 'Web',
      connectionIds: ['con_1', 'con_2'],
      approvalRules: { requireApprovalAbove: 0, approvers: ['ops@example.com'] },
    });
    expect(project).toMatchObject({ id: 'prj_1', name: 'Web', connectionIds: ['con_1', 'con_2'] });
    // 0 is set, not absent: explicit presence survives the wire.
    expect(project.approvalRules).toMatchObject({ requireApprovalAbove: 0, approvers: ['ops@example.com'] });
    expect(timestampDate(project.createdAt!)).toEqual(createdAt);
    expect(project.updatedAt).toBeUndefined();
    expect(project.budgets[0]).toMatchObject({
      amount: 1234.5,
      currency: 'EUR',
      percentageUsed: 99.9,
      name: '',
    });
  });

  it('tell an unset optional field from an empty one', async () => {
    const received: budgets.UpdateProjectRequest[] = [];
    backend.handlers.updateProject = async (request) => {
      received.push(request);
      return { id: request.id };
    };
    await client.updateProject({ id: 'prj_1' });
    await client.updateProject({ id: 'prj_1', name: '', connectionIds: { values: [] } });
    const [unset, empty] = received;
    expect([unset!.name, unset!.connectionIds, unset!.approvalRules]).toEqual([
      undefined,
      undefined,
      undefined,
    ]);
    expect(empty).toMatchObject({ name: '', connectionIds: { values: [] } });
  });
});

describe('call context', () => {
  it('carries team, request id and actor to the handler, with the deadline', async () => {
    let seen: CallContext | undefined;
    backend.handlers.getProject = async (request, ctx) => {
      seen = ctx;
      return { id: request.id };
    };
    const before = Date.now();
    await client.getProject({ id: 'prj_1' }, { teamId: 'team_1', requestId: 'req_1', actor: 'key_1' });
    expect(seen).toMatchObject({ teamId: 'team_1', requestId: 'req_1', actor: 'key_1' });
    // The client's 2 s: the server adds the time the call took to reach it (grpc-timeout is relative), which
    // a loaded machine can stretch past 100 ms, so the bound is half a second either way.
    expect(seen!.deadline!.getTime() - before).toBeGreaterThan(1_500);
    expect(seen!.deadline!.getTime() - before).toBeLessThanOrEqual(2_500);
  });

  it('carries the idempotency key and fingerprint, and tells the caller when the answer was replayed', async () => {
    let seen: CallContext | undefined;
    backend.handlers.createProject = async (request, ctx) => {
      seen = ctx;
      ctx.replayed = request.name === 'again';
      return { id: 'prj_1', name: request.name };
    };
    const first: CallContext = {
      teamId: 'team_1',
      idempotencyKey: 'k'.repeat(64),
      idempotencyFingerprint: 'f1',
    };
    await client.createProject({ name: 'first' }, first);
    expect(seen).toMatchObject({ idempotencyKey: 'k'.repeat(64), idempotencyFingerprint: 'f1' });
    expect(first.replayed).toBeUndefined();
    const again: CallContext = {
      teamId: 'team_1',
      idempotencyKey: 'k'.repeat(64),
      idempotencyFingerprint: 'f1',
    };
    expect(await client.createProject({ name: 'again' }, again)).toMatchObject({ name: 'again' });
    expect(again.replayed).toBe(true);
  });

  it('uses a caller deadline sooner than the client default', async () => {
    let seen: CallContext | undefined;
    backend.handlers.getProject = async (request, ctx) => {
      seen = ctx;
      return { id: request.id };
    };
    const deadline = new Date(Date.now() + 500);
    await client.getProject({ id: 'prj_1' }, { deadline });
    // The caller's 500 ms, not the client's 2 s; the slack is the call's way to the server.
    expect(Math.abs(seen!.deadline!.getTime() - deadline.getTime())).toBeLessThan(300);
    expect(seen!.teamId).toBeUndefined();
  });

  it('logs each call with method, status and duration', async () => {
    backend.handlers.deleteProject = async () => ({});
    await client.deleteProject({ id: 'prj_1' });
    expect(backend.logs.debug.at(-1)).toEqual([
      { method: '/costgov.budgets.v1.ProjectsService/DeleteProject', code: 'OK', ms: expect.any(Number) },
      'rpc call',
    ]);
  });
});

describe('unavailable backends', () => {
  it('turns an exceeded deadline into UnavailableError', async () => {
    backend.handlers.listProjects = async () => {
      await sleep(1_000);
      return {};
    };
    const started = Date.now();
    const error = await client
      .listProjects({}, { deadline: new Date(Date.now() + 150) })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(UnavailableError);
    expect(Date.now() - started).toBeLessThan(900);
  });

  it('fails fast with UnavailableError when nothing listens on the port', async () => {
    const port = await freePort();
    const orphan = createRpcClient(ProjectsService, `127.0.0.1:${port}`, { deadlineMs: 5_000 });
    try {
      const started = Date.now();
      const error = await orphan.getProject({ id: 'prj_1' }).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(UnavailableError);
      expect((error as Error).message).not.toContain(String(port));
      expect(Date.now() - started).toBeLessThan(1_000);
    } finally {
      orphan.close();
    }
  });
});

describe('health', () => {
  it('answers SERVING for the server and each service, NOT_SERVING after setServing(false)', async () => {
    const name = ProjectsService.typeName;
    expect(await checkHealth(backend.address)).toBe('SERVING');
    expect(await checkHealth(backend.address, name)).toBe('SERVING');
    backend.server.setServing(name, false);
    try {
      expect(await checkHealth(backend.address, name)).toBe('NOT_SERVING');
      expect(await checkHealth(backend.address)).toBe('SERVING');
    } finally {
      backend.server.setServing(name, true);
    }
  });

  it('refuses a status for a service it does not serve', () => {
    expect(() => backend.server.setServing('costgov.budgets.v1.Nope', false)).toThrow(/Unknown service/);
  });
});

describe('registration', () => {
  const { logger } = recordingLogger();

  it('refuses streaming methods', () => {
    const [method] = ProjectsService.methods;
    const streaming: DescService = {
      ...ProjectsService,
      methods: [{ ...method!, methodKind: 'server_streaming' as const }],
    };
    expect(() => createRpcServer({ logger }).add(streaming, {})).toThrow(
      /server_streaming method.*unary and client-streaming methods only/,
    );
  });

  it('refuses an implementation that misses a method', () => {
    const partial = { getProject: async () => ({}) } as never;
    expect(() => createRpcServer({ logger }).add(ProjectsService, partial)).toThrow(
      /no handler for createProject/,
    );
  });
});

describe('shutdown', () => {
  it('lets an in-flight call finish, then refuses new ones', async () => {
    const own = await startProjectsServer();
    const ownClient = createRpcClient(ProjectsService, own.address);
    let started!: () => void;
    const handlerStarted = new Promise<void>((resolve) => (started = resolve));
    own.handlers.getProject = async (request) => {
      started();
      await sleep(300);
      return { id: request.id, name: 'finished' };
    };
    try {
      const inFlight = ownClient.getProject({ id: 'prj_1' });
      await handlerStarted;
      const stopped = own.server.shutdown(5_000);
      await expect(inFlight).resolves.toMatchObject({ name: 'finished' });
      await stopped;
      await expect(ownClient.getProject({ id: 'prj_2' })).rejects.toBeInstanceOf(UnavailableError);
    } finally {
      ownClient.close();
    }
  });

  it('cancels calls still running after the grace period', async () => {
    const own = await startProjectsServer();
    const ownClient = createRpcClient(ProjectsService, own.address);
    own.handlers.getProject = () => new Promise(() => {});
    try {
      const inFlight = ownClient.getProject({ id: 'prj_1' }).catch((e: unknown) => e);
      await sleep(50);
      const started = Date.now();
      await own.server.shutdown(100);
      expect(Date.now() - started).toBeLessThan(1_000);
      expect(await inFlight).toBeInstanceOf(UnavailableError);
    } finally {
      ownClient.close();
    }
  });
});

import type { AddressInfo } from 'node:net';
import { request as httpRequest, type Server } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { create } from '@bufbuild/protobuf';
import { timestampNow } from '@bufbuild/protobuf/wkt';
import { budgets, identity } from '@costgov/contracts';
import { UnauthenticatedError, UnavailableError } from '@costgov/errors';
import type { CallContext } from '@costgov/rpc';
import { IdempotencyKeyReusedError } from '@costgov/runtime';
import { createLogger } from '@costgov/log';
import {
  createFallbackIdempotencyStore,
  createMemoryIdempotencyStore,
  createRedisIdempotencyStore,
  type IdempotencyStore,
} from '@costgov/idempotency';
import { createMemoryLimiter } from '@costgov/ratelimit';
import { eventually, freePort, startRedisServer, uniqueName, type RedisServer } from '@costgov/testing';
import { createGatewayApp } from '../src/app';
import { authenticator } from '../src/http/auth';
import { loadOpenApiDocument } from '../src/openapi/document';
import { deadBackends } from './dead-backends';

const logger = createLogger('test', 'silent');
const teamKeys = {
  team_a: 'cg_live_idempotencyteama00000000000000000',
  team_b: 'cg_live_idempotencyteamb00000000000000000',
};
const ttlMs = 600;

/** Identity stand-in: each key is its team's (the real identity service is tested end to end elsewhere). */
const identityStandIn = {
  async authenticate({ credential }: { credential?: string }) {
    const team = Object.entries(teamKeys).find(([, key]) => key === credential)?.[0];
    if (!team) throw new UnauthenticatedError();
    return create(identity.AuthenticateResponseSchema, {
      principal: {
        teamId: team,
        credentialId: `key_${team}`,
        kind: identity.CredentialKind.API_KEY,
        scopes: ['guard:read', 'guard:write'],
        plan: 'team',
        limits: { requestsPerMinute: 100_000, concurrentRequests: 100 },
      },
      cacheTtlSeconds: 30,
    });
  },
};

/**
 * The budgets service's projects, in memory: counts calls, can hold a creation until released (to
 * overlap requests), and can fail the next creations as a backend that is down does.
 */
function projectsStandIn() {
  const byTeam = new Map<string, budgets.Project[]>();
  const state = {
    created: 0,
    hold: undefined as Promise<void> | undefined,
    failNext: 0,
    contexts: [] as CallContext[],
  };
  const client = {
    async createProject(input: { name: string; connectionIds: string[] }, context: CallContext) {
      state.contexts.push({ ...context });
      if (state.failNext > 0) {
        state.failNext--;
        throw new UnavailableError();
      }
      // As a service whose record of the key is another request's, or that answered from its record.
      if (input.name === 'refused-by-service') throw new IdempotencyKeyReusedError();
      if (input.name === 'replayed-by-service') context.replayed = true;
      await state.hold;
      state.created++;
      const project = create(budgets.ProjectSchema, {
        id: `prj_${String(state.created).padStart(26, '0')}`,
        name: input.name,
        status: 'active',
        connectionIds: input.connectionIds,
        createdAt: timestampNow(),
        updatedAt: timestampNow(),
      });
      byTeam.set(context.teamId!, [...(byTeam.get(context.teamId!) ?? []), project]);
      return project;
    },
    async listProjects(_input: unknown, context: { teamId: string }) {
      const projects = byTeam.get(context.teamId) ?? [];
      return create(budgets.ListProjectsResponseSchema, {
        projects,
        meta: { currentPage: 1, perPage: 25, totalPages: 1, totalCount: projects.length },
      });
    },
  };
  /** Holds every creation until the returned function is called. */
  const holdCreations = () => {
    let release!: () => void;
    state.hold = new Promise((resolve) => (release = resolve));
    return () => {
      state.hold = undefined;
      release();
    };
  };
  return { client, state, holdCreations };
}

interface Gateway {
  url: string;
  projects: ReturnType<typeof projectsStandIn>;
  close(): Promise<void>;
}

async function startGateway(store: IdempotencyStore, projects = projectsStandIn()): Promise<Gateway> {
  const app = createGatewayApp({
    logger,
    openapi: loadOpenApiDocument(),
    auth: authenticator({ identityClient: identityStandIn as never, maxTtlMs: 30_000 }),
    limiter: createMemoryLimiter(),
    ...deadBackends(await freePort(), { deadlineMs: 1000 }),
    projects: projects.client as never,
    idempotency: store,
    backendsReady: async () => ({}),
    draining: () => false,
  });
  const server: Server = await new Promise((resolve) => {
    const s = app.listen(0, '127.0.0.1', () => resolve(s));
  });
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    projects,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

interface Reply {
  status: number;
  headers: Headers;
  text: string;
  body: any; // eslint-disable-line @typescript-eslint/no-explicit-any
}

async function post(
  gateway: Gateway,
  body: unknown,
  options: {
    key?: string;
    team?: keyof typeof teamKeys;
    path?: string;
    raw?: string;
    contentType?: string;
  } = {},
): Promise<Reply> {
  const headers: Record<string, string> = {
    authorization: `Bearer ${teamKeys[options.team ?? 'team_a']}`,
    'content-type': options.contentType ?? 'application/json',
  };
  if (options.key !== undefined) headers['idempotency-key'] = options.key;
  const response = await fetch(`${gateway.url}${options.path ?? '/v1/guard/projects'}`, {
    method: 'POST',
    headers,
    body: options.raw ?? JSON.stringify(body),
  });
  const text = await response.text();
  return {
    status: response.status,
    headers: response.headers,
    text,
    body: text ? JSON.parse(text) : undefined,
  };
}

const projectCount = async (gateway: Gateway, team: keyof typeof teamKeys = 'team_a') => {
  const response = await fetch(`${gateway.url}/v1/guard/projects`, {
    headers: { authorization: `Bearer ${teamKeys[team]}` },
  });
  return ((await response.json()) as { meta: { total_count: number } }).meta.total_count;
};

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** The behaviour of the Idempotency-Key on POST, whichever store keeps the keys. */
function describeIdempotency(openStore: (options: { ttlMs: number }) => Promise<IdempotencyStore>) {
  let gateway: Gateway;
  beforeAll(async () => {
    gateway = await startGateway(await openStore({ ttlMs }));
  });
  afterAll(() => gateway.close());

  it('replays the first answer to a retry with the same key and body, creating nothing new', async () => {
    const key = uniqueName('create');
    const first = await post(gateway, { name: 'checkout', connection_ids: [] }, { key });
    expect(first.status).toBe(201);
    expect(first.headers.get('idempotent-replayed')).toBeNull();
    const created = gateway.projects.state.created;
    const count = await projectCount(gateway);
    // The same JSON with other spacing and key order is the same request.
    const retry = await post(gateway, undefined, {
      key,
      raw: '{ "connection_ids": [],\n "name": "checkout" }',
    });
    expect(retry.status).toBe(201);
    expect(retry.headers.get('idempotent-replayed')).toBe('true');
    expect(retry.text).toBe(first.text);
    expect(retry.headers.get('location')).toBe(first.headers.get('location'));
    expect(retry.headers.get('content-type')).toBe(first.headers.get('content-type'));
    expect(retry.headers.get('x-request-id')).not.toBe(first.headers.get('x-request-id'));
    expect(gateway.projects.state.created).toBe(created);
    expect(await projectCount(gateway)).toBe(count);
  });

  it("takes the key in the draft's quoted form as the same key", async () => {
    const key = uniqueName('quoted');
    const first = await post(gateway, { name: 'quoted' }, { key });
    const retry = await post(gateway, { name: 'quoted' }, { key: `"${key}"` });
    expect(retry.headers.get('idempotent-replayed')).toBe('true');
    expect(retry.text).toBe(first.text);
  });

  it('answers 422 idempotency_key_reused to the same key with another body, changing nothing', async () => {
    const key = uniqueName('reused');
    expect((await post(gateway, { name: 'first' }, { key })).status).toBe(201);
    const count = await projectCount(gateway);
    const reused = await post(gateway, { name: 'second' }, { key });
    expect(reused.status).toBe(422);
    expect(reused.body.error).toMatchObject({
      code: 'idempotency_key_reused',
      details: [{ field: 'Idempotency-Key', message: 'was used with a different request' }],
    });
    expect(await projectCount(gateway)).toBe(count);
  });

  it('runs exactly one of two concurrent requests with one key; the other gets 409 with Retry-After', async () => {
    const key = uniqueName('concurrent');
    const created = gateway.projects.state.created;
    const release = gateway.projects.holdCreations();
    const first = post(gateway, { name: 'concurrent' }, { key });
    await eventually(async () => {
      const second = await post(gateway, { name: 'concurrent' }, { key });
      if (second.status === 201) throw new Error('the second request ran');
      expect(second.status).toBe(409);
      expect(second.body.error.code).toBe('conflict');
      expect(second.headers.get('retry-after')).toBe('1');
      return true;
    });
    // Another body meanwhile is still a different request.
    expect((await post(gateway, { name: 'other' }, { key })).status).toBe(422);
    release();
    expect((await first).status).toBe(201);
    expect(gateway.projects.state.created).toBe(created + 1);
    const after = await post(gateway, { name: 'concurrent' }, { key });
    expect(after.headers.get('idempotent-replayed')).toBe('true');
    expect(gateway.projects.state.created).toBe(created + 1);
  });

  it('keeps the answer of a request whose client went away, so that its retry does not run again', async () => {
    const key = uniqueName('abandoned');
    const created = gateway.projects.state.created;
    const release = gateway.projects.holdCreations();
    const abandoned = new AbortController();
    const first = fetch(`${gateway.url}/v1/guard/projects`, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${teamKeys.team_a}`,
        'content-type': 'application/json',
        'idempotency-key': key,
      },
      body: JSON.stringify({ name: 'abandoned' }),
      signal: abandoned.signal,
    });
    await eventually(
      async () => (await post(gateway, { name: 'abandoned' }, { key })).status === 409 || undefined,
    );
    abandoned.abort();
    await expect(first).rejects.toThrow();
    await sleep(200); // the gateway sees the connection closed before the operation completes
    release();
    const retry = await eventually(async () => {
      const reply = await post(gateway, { name: 'abandoned' }, { key });
      return reply.status === 409 ? undefined : reply;
    });
    expect(retry.status).toBe(201);
    expect(retry.headers.get('idempotent-replayed')).toBe('true');
    expect(gateway.projects.state.created).toBe(created + 1);
  });

  it('keeps the keys of two teams apart', async () => {
    const key = uniqueName('shared-key');
    const a = await post(gateway, { name: 'same' }, { key, team: 'team_a' });
    const countB = await projectCount(gateway, 'team_b');
    const b = await post(gateway, { name: 'same' }, { key, team: 'team_b' });
    expect(b.status).toBe(201);
    expect(b.headers.get('idempotent-replayed')).toBeNull();
    expect(b.body.data.id).not.toBe(a.body.data.id);
    expect(await projectCount(gateway, 'team_b')).toBe(countB + 1);
    // And team B's other body is not team A's reuse.
    expect((await post(gateway, { name: 'b-only' }, { key: uniqueName('b'), team: 'team_b' })).status).toBe(
      201,
    );
  });

  it('forgets a key after its TTL: the same key then runs again', async () => {
    const key = uniqueName('expiry');
    const first = await post(gateway, { name: 'expiring' }, { key });
    expect((await post(gateway, { name: 'expiring' }, { key })).headers.get('idempotent-replayed')).toBe(
      'true',
    );
    await sleep(ttlMs + 100);
    const later = await post(gateway, { name: 'expiring' }, { key });
    expect(later.status).toBe(201);
    expect(later.headers.get('idempotent-replayed')).toBeNull();
    expect(later.body.data.id).not.toBe(first.body.data.id);
  });

  it('does not keep a 503: a retry with the same key runs and succeeds', async () => {
    const key = uniqueName('unavailable');
    gateway.projects.state.failNext = 1;
    const failed = await post(gateway, { name: 'after-outage' }, { key });
    expect(failed.status).toBe(503);
    const retry = await post(gateway, { name: 'after-outage' }, { key });
    expect(retry.status).toBe(201);
    expect(retry.headers.get('idempotent-replayed')).toBeNull();
  });

  it('keeps a 422 the operation decided, and not a 400 for a request it could not read', async () => {
    const invalidKey = uniqueName('invalid-body');
    const invalid = await post(gateway, { name: '' }, { key: invalidKey });
    expect(invalid.status).toBe(422);
    const again = await post(gateway, { name: '' }, { key: invalidKey });
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    expect(again.text).toBe(invalid.text);

    const badQueryKey = uniqueName('bad-query');
    const path = '/v1/guard/projects?unknown=1';
    expect((await post(gateway, { name: 'q' }, { key: badQueryKey, path })).status).toBe(400);
    const retried = await post(gateway, { name: 'q' }, { key: badQueryKey, path });
    expect(retried.status).toBe(400);
    expect(retried.headers.get('idempotent-replayed')).toBeNull();
  });

  it.each([
    ['empty', ''],
    ['longer than 255 characters', 'k'.repeat(256)],
    ['not ASCII', 'schl\u00fcssel'],
    ['with a control character', 'a\tb'],
  ])('answers 400 to a key that is %s, and runs nothing', async (_case, key) => {
    const created = gateway.projects.state.created;
    const reply = await post(gateway, { name: 'bad-key' }, { key });
    expect(reply.status).toBe(400);
    expect(reply.body.error).toMatchObject({ code: 'bad_request', details: [{ field: 'Idempotency-Key' }] });
    expect(gateway.projects.state.created).toBe(created);
  });

  it('sends the key, hashed per team, and the fingerprint to the service; its replay is marked', async () => {
    const key = uniqueName('forwarded');
    const first = await post(gateway, { name: 'replayed-by-service' }, { key });
    expect(first.status).toBe(201);
    const sent = gateway.projects.state.contexts.at(-1)!;
    expect(sent.idempotencyKey).toMatch(/^[0-9a-f]{64}$/);
    expect(sent.idempotencyKey).not.toContain(key);
    expect(sent.idempotencyFingerprint).toMatch(/^[0-9a-f]{64}$/);
    expect(first.headers.get('idempotent-replayed')).toBe('true');
    // Without a key the service gets none.
    expect((await post(gateway, { name: 'unkeyed' })).status).toBe(201);
    expect(gateway.projects.state.contexts.at(-1)!.idempotencyKey).toBeUndefined();
  });

  it("does not keep a service's idempotency_key_reused: the key's own request still reaches it", async () => {
    const key = uniqueName('refused');
    const refused = await post(gateway, { name: 'refused-by-service' }, { key });
    expect(refused.status).toBe(422);
    expect(refused.body.error.code).toBe('idempotency_key_reused');
    const created = gateway.projects.state.created;
    const original = await post(gateway, { name: 'the original' }, { key });
    expect(original.status).toBe(201);
    expect(gateway.projects.state.created).toBe(created + 1);
  });

  it('accepts a key of exactly 255 printable characters', async () => {
    expect(
      (await post(gateway, { name: 'long-key' }, { key: `${uniqueName('k')} ~`.padEnd(255, 'x') })).status,
    ).toBe(201);
  });

  it('answers 400 to a key given twice', async () => {
    const { port } = new URL(gateway.url);
    const status = await new Promise<number>((resolve, reject) => {
      const body = JSON.stringify({ name: 'twice' });
      const req = httpRequest(
        {
          host: '127.0.0.1',
          port,
          method: 'POST',
          path: '/v1/guard/projects',
          headers: {
            authorization: `Bearer ${teamKeys.team_a}`,
            'content-type': 'application/json',
            'content-length': Buffer.byteLength(body),
            'idempotency-key': ['one', 'two'],
          },
        },
        (res) => {
          res.resume();
          resolve(res.statusCode!);
        },
      );
      req.on('error', reject);
      req.end(body);
    });
    expect(status).toBe(400);
  });

  it('accepts and ignores the header on the streamed cost-data upload', async () => {
    const path = '/v1/guard/connections/con_01j8x3k2m4n5p6q7r8s9t0v1w2/cost-data';
    const upload = { path, raw: 'BilledCost\n1\n', contentType: 'text/csv' };
    // A malformed key is not even looked at there,
    expect((await post(gateway, undefined, { key: '', ...upload })).status).not.toBe(400);
    // and nothing is kept for replay: a re-upload replaces the billing period instead.
    const key = uniqueName('upload');
    await post(gateway, undefined, { key, ...upload });
    const again = await post(gateway, undefined, { key, ...upload });
    expect(again.headers.get('idempotent-replayed')).toBeNull();
  });
}

describe('Idempotency-Key with keys in memory (the embedded default)', () => {
  describeIdempotency(async ({ ttlMs }) => createMemoryIdempotencyStore({ ttlMs }));
});

describe('Idempotency-Key with keys in Redis', () => {
  let redis: RedisServer;
  const stores: IdempotencyStore[] = [];
  beforeAll(async () => {
    redis = await startRedisServer();
  });
  afterAll(async () => {
    await Promise.all(stores.map((store) => store.close()));
    await redis?.close();
  });
  const openRedisStore = async (options: { ttlMs?: number; lockTtlMs?: number; url?: string } = {}) => {
    const store = createRedisIdempotencyStore({
      url: options.url ?? redis.url,
      logger,
      timeoutMs: 1_000,
      ...options,
    });
    await store.ready();
    stores.push(store);
    return store;
  };

  // On real infrastructure the configured Redis; otherwise one started for the test.
  describeIdempotency(({ ttlMs }) => openRedisStore({ ttlMs, url: process.env.REDIS_URL }));

  it('shares keys between two gateway replicas: one runs, the other answers 409, then replays', async () => {
    const projects = projectsStandIn();
    const [one, two] = [
      await startGateway(await openRedisStore(), projects),
      await startGateway(await openRedisStore(), projects),
    ];
    try {
      const key = uniqueName('replicas');
      const release = projects.holdCreations();
      const first = post(one, { name: 'replicated' }, { key });
      await eventually(
        async () => (await post(two, { name: 'replicated' }, { key })).status === 409 || undefined,
      );
      release();
      const answer = await first;
      const replay = await post(two, { name: 'replicated' }, { key });
      expect(replay.headers.get('idempotent-replayed')).toBe('true');
      expect(replay.text).toBe(answer.text);
      expect(projects.state.created).toBe(1);
    } finally {
      await Promise.all([one.close(), two.close()]);
    }
  });

  it("frees the key of a gateway that stopped mid-request once its lock expires, and keeps the retry's answer", async () => {
    const lockTtlMs = 300;
    const stuck = projectsStandIn();
    const [dying, healthy] = [
      await startGateway(await openRedisStore({ lockTtlMs }), stuck),
      await startGateway(await openRedisStore({ lockTtlMs })),
    ];
    const releaseStuck = stuck.holdCreations(); // this gateway never gets to answer
    try {
      const key = uniqueName('stopped');
      const lost = post(dying, { name: 'stopped' }, { key }).catch(() => undefined);
      await eventually(
        async () => (await post(healthy, { name: 'stopped' }, { key })).status === 409 || undefined,
      );
      await sleep(lockTtlMs + 100);
      const retry = await post(healthy, { name: 'stopped' }, { key });
      expect(retry.status).toBe(201);
      expect(retry.headers.get('idempotent-replayed')).toBeNull();
      // The stopped request finishing late does not overwrite the answer its retry stored.
      releaseStuck();
      await lost;
      const again = await post(healthy, { name: 'stopped' }, { key });
      expect(again.headers.get('idempotent-replayed')).toBe('true');
      expect(again.text).toBe(retry.text);
    } finally {
      releaseStuck();
      await Promise.all([dying.close(), healthy.close()]);
    }
  });

  it('keeps serving while Redis is down, with keys per process, and uses Redis again when it is back', async () => {
    const primary = await openRedisStore();
    const store = createFallbackIdempotencyStore({
      primary,
      fallback: createMemoryIdempotencyStore(),
      logger,
      retryIntervalMs: 100,
    });
    const gateway = await startGateway(store);
    try {
      await redis.stop();
      const key = uniqueName('outage');
      const first = await post(gateway, { name: 'during-outage' }, { key });
      expect(first.status).toBe(201);
      const retry = await post(gateway, { name: 'during-outage' }, { key });
      expect(retry.headers.get('idempotent-replayed')).toBe('true');
      expect(gateway.projects.state.created).toBe(1);
      await redis.start();
      await eventually(async () => {
        const back = uniqueName('back');
        await post(gateway, { name: back }, { key: back });
        return (await redis.admin.keys(`costgov:idem:team_a:*`)).length > 0 || undefined;
      });
    } finally {
      await gateway.close();
    }
  });
});

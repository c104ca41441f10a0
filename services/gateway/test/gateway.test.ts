import type { AddressInfo } from 'node:net';
import type { Server } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { create } from '@bufbuild/protobuf';
import { identity } from '@costgov/contracts';
import { UnauthenticatedError } from '@costgov/errors';
import { createLogger } from '@costgov/log';
import { freePort } from '@costgov/testing';
import { createMemoryLimiter } from '@costgov/ratelimit';
import { createGatewayApp } from '../src/app';
import { authenticator } from '../src/http/auth';
import { loadOpenApiDocument } from '../src/openapi/document';
import { deadBackends } from './dead-backends';

const logger = createLogger('test', 'silent');
const goodKey = 'cg_live_gatewayunittestkey000000000000000';
let authCalls = 0;

/** Identity stand-in for the gateway's own behaviour (the real identity service is tested end to end elsewhere). */
const identityStandIn = {
  async authenticate({ credential }: { credential?: string }) {
    authCalls++;
    if (!credential?.startsWith('cg_live_gateway')) throw new UnauthenticatedError();
    return create(identity.AuthenticateResponseSchema, {
      principal: {
        teamId: 'team_1',
        credentialId: 'key_1',
        kind: identity.CredentialKind.API_KEY,
        scopes: ['guard:read', 'guard:write'],
        plan: 'team',
        limits: { requestsPerMinute: 120, concurrentRequests: 10 },
      },
      cacheTtlSeconds: 30,
    });
  },
};

let server: Server;
let base = '';

beforeAll(async () => {
  // The budgets service is down: nothing listens on this port.
  const deadPort = await freePort();
  const app = createGatewayApp({
    logger,
    openapi: loadOpenApiDocument(),
    auth: authenticator({ identityClient: identityStandIn as never, maxTtlMs: 30_000 }),
    limiter: createMemoryLimiter(),
    ...deadBackends(deadPort, { deadlineMs: 1000 }),
    backendsReady: async () => ({ budgets: false }),
    draining: () => false,
  });
  server = await new Promise((resolve) => {
    const s = app.listen(0, '127.0.0.1', () => resolve(s));
  });
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

const get = (path: string, key = goodKey) =>
  fetch(`${base}${path}`, { headers: { authorization: `Bearer ${key}` } });

describe('gateway', () => {
  it('answers 503 service_unavailable with Retry-After when a backend is down, without internals', async () => {
    const response = await get('/v1/guard/projects');
    expect(response.status).toBe(503);
    expect(response.headers.get('retry-after')).toBe('1');
    const body = (await response.json()) as { error: { code: string; message: string } };
    expect(body.error.code).toBe('service_unavailable');
    expect(body.error.message).not.toMatch(/127\.0\.0\.1|ECONNREFUSED|at /);
  });

  it('answers 503 with Retry-After on webhooks when the notifier is down', async () => {
    const response = await get('/v1/guard/webhooks');
    expect(response.status).toBe(503);
    expect(response.headers.get('retry-after')).toBe('1');
    expect(((await response.json()) as { error: { code: string } }).error.code).toBe('service_unavailable');
  });

  it('caches a successful authentication and does not cache a failure', async () => {
    authCalls = 0;
    const freshKey = 'cg_live_gatewayunittestkey111111111111111';
    await get('/v1/guard/projects', freshKey);
    await get('/v1/guard/projects', freshKey);
    expect(authCalls).toBe(1);
    await get('/v1/guard/projects', 'cg_live_wrongwrongwrongwrongwrongwrong0000');
    await get('/v1/guard/projects', 'cg_live_wrongwrongwrongwrongwrongwrong0000');
    expect(authCalls).toBe(3);
  });

  it('reports backends on /readyz but stays ready while not draining', async () => {
    const response = await fetch(`${base}/readyz`);
    expect(response.status).toBe(200);
    expect(await response.json()).toEqual({ status: 'ready', backends: { budgets: false } });
  });
});

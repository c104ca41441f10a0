import { randomBytes } from 'node:crypto';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { create } from '@bufbuild/protobuf';
import { loadConfig } from '@costgov/config';
import { identity } from '@costgov/contracts';
import { UnauthenticatedError } from '@costgov/errors';
import { createLogger } from '@costgov/log';
import { createMemoryLimiter, type RateLimiter } from '@costgov/ratelimit';
import { freePort } from '@costgov/testing';
import { createGatewayApp } from '../src/app';
import { gatewayConfig } from '../src/config';
import { authenticator } from '../src/http/auth';
import { createLimiter } from '../src/limiter';
import { loadOpenApiDocument } from '../src/openapi/document';
import { deadBackends } from './dead-backends';

const logger = createLogger('test', 'silent');
const knownKey = 'cg_live_authfailurestestknownkey00000000';
const scimToken = 'cg_scim_authfailurestestscimtoken0000000';
const perMinute = 5;
let identityCalls = 0;

/** Identity stand-in: one API key and one SCIM token are known, everything else is unknown. */
const identityStandIn = {
  async authenticate({ credential }: { credential?: string }) {
    identityCalls++;
    const kind =
      credential === knownKey
        ? identity.CredentialKind.API_KEY
        : credential === scimToken
          ? identity.CredentialKind.SCIM_TOKEN
          : undefined;
    if (!kind) throw new UnauthenticatedError();
    return create(identity.AuthenticateResponseSchema, {
      principal: {
        teamId: 'team_1',
        credentialId: kind === identity.CredentialKind.API_KEY ? 'key_1' : 'sct_1',
        kind,
        scopes: ['guard:read', 'guard:write'],
        plan: 'enterprise',
        limits: { requestsPerMinute: 1000, concurrentRequests: 10 },
      },
      cacheTtlSeconds: 30,
    });
  },
};

interface Gateway {
  base: string;
  server: Server;
  limiter: RateLimiter;
  clock: { ms: number };
}

/**
 * A gateway on the limiter the configuration gives (Redis in the real-infrastructure run, so the failure
 * budget is the shared one), with a clock the negative cache reads.
 */
async function startGateway(options: {
  trustProxy: boolean;
  bodyTimeoutMs?: number;
  limiter?: RateLimiter;
}): Promise<Gateway> {
  const config = loadConfig(gatewayConfig, {
    REDIS_URL: process.env.REDIS_URL ?? '',
    RATE_LIMIT_REDIS_TIMEOUT_MS: '250',
  });
  const limiter = options.limiter ?? (await createLimiter(config, logger));
  const clock = { ms: Date.now() };
  const deadPort = await freePort();
  const app = createGatewayApp({
    logger,
    openapi: loadOpenApiDocument(),
    auth: authenticator({
      identityClient: identityStandIn as never,
      maxTtlMs: 30_000,
      negativeTtlMs: 5_000,
      failures: { limiter, perMinute },
      now: () => clock.ms,
    }),
    limiter,
    ...deadBackends(deadPort, { deadlineMs: 500 }),
    backendsReady: async () => ({}),
    draining: () => false,
    trustProxy: options.trustProxy,
    bodyTimeoutMs: options.bodyTimeoutMs,
  });
  const server: Server = await new Promise((resolve) => {
    const s = app.listen(0, '127.0.0.1', () => resolve(s));
  });
  return { base: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, server, limiter, clock };
}

const stopGateway = async ({ server, limiter }: Gateway) => {
  server.closeAllConnections();
  await new Promise<void>((resolve) => server.close(() => resolve()));
  await limiter.close();
};

const randomKey = () => `cg_live_${randomBytes(20).toString('hex')}`;
/** A documentation address (RFC 5737) no other test uses, so that budgets in a shared Redis stay apart. */
const randomAddress = () => `198.51.100.${1 + (randomBytes(1)[0]! % 254)}, 203.0.113.${randomBytes(1)[0]}`;
const uniqueAddress = () => `2001:db8::${randomBytes(6).toString('hex').match(/.{4}/g)!.join(':')}`;

const call = (gateway: Gateway, path: string, credential: string, forwardedFor?: string) =>
  fetch(`${gateway.base}${path}`, {
    headers: {
      authorization: `Bearer ${credential}`,
      ...(forwardedFor ? { 'x-forwarded-for': forwardedFor } : {}),
    },
  });

describe('unknown credentials', () => {
  let gateway: Gateway;
  beforeAll(async () => (gateway = await startGateway({ trustProxy: true })));
  afterAll(() => stopGateway(gateway));

  it('are asked of identity once within the negative-cache time, and again after it', async () => {
    const key = randomKey();
    const from = uniqueAddress();
    identityCalls = 0;
    for (let i = 0; i < 3; i++) {
      const response = await call(gateway, '/v1/guard/projects', key, from);
      expect(response.status).toBe(401);
      expect(((await response.json()) as { error: { code: string } }).error.code).toBe('unauthorized');
      expect(response.headers.get('www-authenticate')).toBe('Bearer realm="costgov", error="invalid_token"');
    }
    expect(identityCalls).toBe(1);
    gateway.clock.ms += 5_001;
    expect((await call(gateway, '/v1/guard/projects', key, from)).status).toBe(401);
    expect(identityCalls).toBe(2);
  });

  it('from one address are answered 429 with Retry-After once its budget is spent, without asking identity', async () => {
    const from = uniqueAddress();
    for (let i = 0; i < perMinute; i++) {
      expect((await call(gateway, '/v1/guard/projects', randomKey(), from)).status).toBe(401);
    }
    const refused = await call(gateway, '/v1/guard/projects', randomKey(), from);
    expect(refused.status).toBe(429);
    expect(Number(refused.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    const body = (await refused.json()) as { error: { code: string; message: string; details: unknown[] } };
    expect(body.error).toMatchObject({ code: 'rate_limited', details: [] });
    expect(body.error.message).toMatch(/failed authentications/);

    identityCalls = 0;
    const again = await call(gateway, '/v1/guard/projects', randomKey(), from);
    expect(again.status).toBe(429);
    expect(identityCalls).toBe(0);

    const scimRefused = await call(gateway, '/scim/v2/Users', randomKey(), from);
    expect(scimRefused.status).toBe(429);
    expect(scimRefused.headers.get('content-type')).toMatch(/^application\/scim\+json/);
    expect(Number(scimRefused.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    expect(await scimRefused.json()).toMatchObject({
      schemas: ['urn:ietf:params:scim:api:messages:2.0:Error'],
      status: '429',
    });
  });

  it('do not lock out a known credential already cached, nor other addresses', async () => {
    const from = uniqueAddress();
    expect((await call(gateway, '/v1/guard/projects', knownKey, from)).status).toBe(503); // past auth
    for (let i = 0; i <= perMinute; i++) await call(gateway, '/v1/guard/projects', randomKey(), from);
    expect((await call(gateway, '/v1/guard/projects', randomKey(), from)).status).toBe(429);
    expect((await call(gateway, '/v1/guard/projects', knownKey, from)).status).toBe(503);
    expect((await call(gateway, '/v1/guard/projects', randomKey(), uniqueAddress())).status).toBe(401);
  });

  it('are counted by the X-Forwarded-For client address when TRUST_PROXY says so', async () => {
    const from = randomAddress();
    for (let i = 0; i < perMinute; i++) await call(gateway, '/v1/guard/projects', randomKey(), from);
    expect((await call(gateway, '/v1/guard/projects', randomKey(), from)).status).toBe(429);
  });
});

describe('without TRUST_PROXY', () => {
  let gateway: Gateway;
  // The socket address is 127.0.0.1 here: a limiter of its own, so no shared Redis budget is spent.
  beforeAll(
    async () => (gateway = await startGateway({ trustProxy: false, limiter: createMemoryLimiter() })),
  );
  afterAll(() => stopGateway(gateway));

  it('counts by the socket address: a forged X-Forwarded-For does not buy a new budget', async () => {
    for (let i = 0; i < perMinute; i++) {
      expect((await call(gateway, '/v1/guard/projects', randomKey(), randomAddress())).status).toBe(401);
    }
    expect((await call(gateway, '/v1/guard/projects', randomKey(), randomAddress())).status).toBe(429);
  });

  it('parses TRUST_PROXY as false by default', () => {
    expect(loadConfig(gatewayConfig, {}).TRUST_PROXY).toBe(false);
    expect(loadConfig(gatewayConfig, { TRUST_PROXY: 'true' }).TRUST_PROXY).toBe(true);
    expect(loadConfig(gatewayConfig, { TRUST_PROXY: '2' }).TRUST_PROXY).toBe(2);
    expect(loadConfig(gatewayConfig, { TRUST_PROXY: 'loopback, 10.0.0.0/8' }).TRUST_PROXY).toBe(
      'loopback, 10.0.0.0/8',
    );
  });
});

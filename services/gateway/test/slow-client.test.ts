import type { Server } from 'node:http';
import { connect, type AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { create } from '@bufbuild/protobuf';
import { ConfigError, loadConfig } from '@costgov/config';
import { identity } from '@costgov/contracts';
import { createLogger } from '@costgov/log';
import { createMemoryLimiter } from '@costgov/ratelimit';
import { freePort } from '@costgov/testing';
import { createGatewayApp } from '../src/app';
import { gatewayConfig } from '../src/config';
import { authenticator } from '../src/http/auth';
import { loadOpenApiDocument } from '../src/openapi/document';
import { startGateway, type RunningGateway } from '../src/server';
import { deadBackends } from './dead-backends';

const logger = createLogger('test', 'silent');
const key = 'cg_live_slowclienttestkey000000000000000';

const scimToken = 'cg_scim_slowclienttesttoken0000000000000';

const identityStandIn = {
  async authenticate({ credential }: { credential?: string }) {
    const scimKind = credential === scimToken;
    return create(identity.AuthenticateResponseSchema, {
      principal: {
        teamId: 'team_1',
        credentialId: scimKind ? 'sct_slow' : 'key_slow',
        kind: scimKind ? identity.CredentialKind.SCIM_TOKEN : identity.CredentialKind.API_KEY,
        scopes: ['guard:read', 'guard:write'],
        plan: 'team',
        limits: { requestsPerMinute: 120, concurrentRequests: 10 },
      },
      cacheTtlSeconds: 30,
    });
  },
};

interface Answer {
  raw: string;
  elapsedMs: number;
  /** Whether the server closed the connection. */
  closed: boolean;
}

/**
 * Sends `head` at once, then `body` one byte per `everyMs`, and collects what comes back until the
 * server closes the connection (or `giveUpMs` passes).
 */
function trickle(
  port: number,
  head: string,
  body: string,
  everyMs: number,
  giveUpMs: number,
): Promise<Answer> {
  return new Promise((resolve) => {
    const started = Date.now();
    const socket = connect(port, '127.0.0.1');
    let raw = '';
    let sent = 0;
    const timer = setInterval(() => {
      if (sent < body.length && !socket.destroyed) socket.write(body[sent++]!);
    }, everyMs);
    const done = (closed: boolean) => {
      clearInterval(timer);
      clearTimeout(giveUp);
      socket.destroy();
      resolve({ raw, elapsedMs: Date.now() - started, closed });
    };
    const giveUp = setTimeout(() => done(false), giveUpMs);
    socket.on('data', (chunk) => (raw += chunk.toString()));
    socket.on('close', () => done(true));
    socket.on('error', () => undefined);
    socket.write(head);
  });
}

describe('a client sending its body slowly', () => {
  let server: Server;
  let port = 0;

  beforeAll(async () => {
    const deadPort = await freePort();
    const app = createGatewayApp({
      logger,
      openapi: loadOpenApiDocument(),
      auth: authenticator({ identityClient: identityStandIn as never, maxTtlMs: 30_000 }),
      limiter: createMemoryLimiter(),
      ...deadBackends(deadPort, { deadlineMs: 500 }),
      backendsReady: async () => ({}),
      draining: () => false,
      bodyTimeoutMs: 1_000,
    });
    server = await new Promise((resolve) => {
      const s = app.listen(0, '127.0.0.1', () => resolve(s));
    });
    port = (server.address() as AddressInfo).port;
  });

  afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

  const body = JSON.stringify({ name: 'slow project name' });
  const head = (path: string, credential = key) =>
    `POST ${path} HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer ${credential}\r\n` +
    `Content-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n`;

  it('is answered 408 in the envelope once the body timeout passes, and the connection is closed', async () => {
    const answer = await trickle(port, head('/v1/guard/projects'), body, 1_000, 10_000);
    expect(answer.closed).toBe(true);
    expect(answer.elapsedMs).toBeLessThan(4_000);
    expect(answer.raw).toMatch(/^HTTP\/1\.1 408 /);
    expect(answer.raw).toMatch(/\r\nconnection: close\r\n/i);
    const payload = JSON.parse(answer.raw.slice(answer.raw.indexOf('\r\n\r\n') + 4)) as {
      error: { code: string; message: string };
    };
    expect(payload.error.code).toBe('bad_request');
    expect(payload.error.message).toMatch(/did not arrive within 1 s/);
  });

  it('gets the SCIM error body on /scim/v2', async () => {
    const answer = await trickle(port, head('/scim/v2/Users', scimToken), body, 1_000, 10_000);
    expect(answer.closed).toBe(true);
    expect(answer.elapsedMs).toBeLessThan(4_000);
    expect(answer.raw).toMatch(/^HTTP\/1\.1 408 /);
    expect(JSON.parse(answer.raw.slice(answer.raw.indexOf('\r\n\r\n') + 4))).toMatchObject({
      schemas: ['urn:ietf:params:scim:api:messages:2.0:Error'],
      status: '408',
    });
  });
});

describe('the gateway server', () => {
  let gateway: RunningGateway;
  beforeAll(async () => {
    gateway = await startGateway(
      loadConfig(gatewayConfig, { PORT: '0', HOST: '127.0.0.1', HEADERS_TIMEOUT_MS: '1000' }),
      logger,
    );
  });
  afterAll(() => gateway.stop());

  it('closes a connection whose headers do not arrive within HEADERS_TIMEOUT_MS with 408', async () => {
    const answer = await trickle(
      gateway.port,
      'GET /healthz HTTP/1.1\r\n',
      'X-Slow: abcdefghijklmnop',
      500,
      10_000,
    );
    expect(answer.closed).toBe(true);
    expect(answer.raw).toMatch(/^HTTP\/1\.1 408 /);
    expect(answer.elapsedMs).toBeLessThan(4_000);
  });

  it.each([
    ['headers over 16 KiB', `GET /healthz HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(20_000)}\r\n\r\n`, 431],
    ['a request line that is not HTTP', 'GARBAGE\r\n\r\n', 400],
  ])('answers %s in the envelope with a request id, not with a bare status', async (_case, raw, status) => {
    const answer = await trickle(gateway.port, raw, '', 1_000, 10_000);
    expect(answer.closed).toBe(true);
    expect(answer.raw).toMatch(new RegExp(`^HTTP/1\\.1 ${status} `));
    expect(answer.raw).toMatch(/\r\nX-Request-Id: req_[0-9a-f]{32}\r\n/);
    const payload = JSON.parse(answer.raw.slice(answer.raw.indexOf('\r\n\r\n') + 4)) as {
      error: { code: string; details: unknown[] };
    };
    expect(payload.error).toMatchObject({ code: 'bad_request', details: [] });
  });

  it('refuses a configuration whose body timeout would outlive the concurrency lease', () => {
    expect(() => loadConfig(gatewayConfig, { RATE_LIMIT_LEASE_TTL_MS: '30000' })).toThrow(/BODY_TIMEOUT_MS/);
    expect(() => loadConfig(gatewayConfig, { BODY_TIMEOUT_MS: '60000' })).toThrow(ConfigError);
    expect(loadConfig(gatewayConfig, {}).BODY_TIMEOUT_MS).toBeLessThan(
      loadConfig(gatewayConfig, {}).RATE_LIMIT_LEASE_TTL_MS,
    );
  });
});

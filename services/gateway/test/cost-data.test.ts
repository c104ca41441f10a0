import { request as httpRequest, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Readable } from 'node:stream';
import { gzipSync } from 'node:zlib';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { create } from '@bufbuild/protobuf';
import { timestampFromDate } from '@bufbuild/protobuf/wkt';
import { costs, identity } from '@costgov/contracts';
import { ConflictError, NotFoundError, ValidationError } from '@costgov/errors';
import { loadConfig } from '@costgov/config';
import { createLogger } from '@costgov/log';
import { createMemoryLimiter } from '@costgov/ratelimit';
import { createRpcClient, createRpcServer, type RpcServer, type ServiceImpl } from '@costgov/rpc';
import { freePort } from '@costgov/testing';
import { createGatewayApp } from '../src/app';
import { gatewayConfig } from '../src/config';
import { authenticator } from '../src/http/auth';
import { loadOpenApiDocument } from '../src/openapi/document';
import { startGateway } from '../src/server';
import { deadBackends } from './dead-backends';

/** What fetch takes as a body (the DOM lib's BodyInit, which this project does not load). */
type BodyInit = NonNullable<RequestInit['body']>;

const logger = createLogger('test', 'silent');
const writer = 'cg_live_costdatatestwriterkey00000000000';
const reader = 'cg_live_costdatatestreaderkey00000000000';
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

const identityStandIn = {
  async authenticate({ credential }: { credential?: string }) {
    return create(identity.AuthenticateResponseSchema, {
      principal: {
        teamId: 'team_1',
        credentialId: credential === writer ? 'key_writer' : 'key_reader',
        kind: identity.CredentialKind.API_KEY,
        scopes: credential === writer ? ['guard:read', 'guard:write'] : ['guard:read'],
        plan: 'team',
        limits: { requestsPerMinute: 600, concurrentRequests: 10 },
      },
      cacheTtlSeconds: 30,
    });
  },
};

/** What the stand-in costs service saw of the last upload. */
interface Received {
  start?: costs.UploadStart;
  teamId?: string;
  bytes: number;
  chunks: Buffer[];
  /** The error that ended the handler's reading (a cut stream), if any. */
  ended?: unknown;
}

type Upload = ServiceImpl<typeof costs.CostDataService>['uploadCostData'];

let costsServer: RpcServer;
let costsAddress = '';
let server: Server;
let base = '';
let received: Received;
let upload: Upload;
const maxBytes = 8 * 1024 * 1024 + 1024;

/** Reads the whole upload as the costs service would, keeping every byte. */
const readAll: Upload = async (requests, ctx) => {
  try {
    for await (const request of requests) {
      if (request.part.case === 'start')
        Object.assign(received, { start: request.part.value, teamId: ctx.teamId });
      if (request.part.case === 'chunk') {
        received.bytes += request.part.value.byteLength;
        received.chunks.push(Buffer.from(request.part.value));
      }
    }
  } catch (error) {
    received.ended = error;
    throw error;
  }
  return {
    connectionId: received.start!.connectionId,
    rows: 3n,
    focusVersion: '1.2',
    billingPeriods: ['2025-01-01'],
    totals: [{ currency: 'USD', billedCost: 12.5, effectiveCost: 11.25 }],
    rowsReplaced: 1n,
    bytes: BigInt(received.bytes),
    durationMs: 7n,
    billingPeriodRanges: [
      {
        start: timestampFromDate(new Date('2025-01-01T00:00:00Z')),
        end: timestampFromDate(new Date('2025-02-01T00:00:00Z')),
      },
    ],
    warnings: [
      {
        code: 'future_charges',
        message: '1 row is charged in the future',
        details: { rows: '1', latest_charge_period_start: '2099-01-01T00:00:00Z' },
      },
    ],
  };
};

beforeAll(async () => {
  costsServer = createRpcServer({ logger });
  const unused = async (): Promise<never> => {
    throw new Error('not called');
  };
  costsServer.add(costs.CostDataService, {
    uploadCostData: (requests, ctx) => upload(requests, ctx),
    getSpend: unused,
    getDailySpend: unused,
    getTagCoverage: unused,
  });
  const costsPort = await costsServer.listen('127.0.0.1:0');
  costsAddress = `127.0.0.1:${costsPort}`;
  const app = createGatewayApp({
    logger,
    openapi: loadOpenApiDocument(),
    auth: authenticator({ identityClient: identityStandIn as never, maxTtlMs: 30_000 }),
    limiter: createMemoryLimiter(),
    ...deadBackends(await freePort(), { deadlineMs: 500 }),
    costData: createRpcClient(costs.CostDataService, costsAddress),
    backendsReady: async () => ({}),
    draining: () => false,
    bodyTimeoutMs: 500,
    upload: { maxBytes, idleTimeoutMs: 400, leaseRenewMs: 20_000 },
  });
  server = await new Promise((resolve) => {
    const s = app.listen(0, '127.0.0.1', () => resolve(s));
  });
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterAll(async () => {
  await new Promise<void>((resolve) => server.close(() => resolve()));
  await costsServer.shutdown(0);
});

beforeEach(() => {
  received = { bytes: 0, chunks: [] };
  upload = readAll;
});

const csv = 'BilledCost,EffectiveCost,BillingCurrency\n1,1,USD\n2,2,USD\n';

function post(
  body: BodyInit,
  headers: Record<string, string> = { 'content-type': 'text/csv' },
  options: { id?: string; credential?: string; query?: string } = {},
) {
  return fetch(`${base}/v1/guard/connections/${options.id ?? 'con_1'}/cost-data${options.query ?? ''}`, {
    method: 'POST',
    headers: { authorization: `Bearer ${options.credential ?? writer}`, ...headers },
    body,
    duplex: 'half',
  } as RequestInit);
}

describe('POST /v1/guard/connections/:id/cost-data', () => {
  it('streams a CSV to the costs service and answers 200 with the summary in snake_case', async () => {
    const response = await post(csv);
    expect(response.status).toBe(200);
    expect(await response.json()).toEqual({
      data: {
        connection_id: 'con_1',
        rows: 3,
        focus_version: '1.2',
        billing_periods: ['2025-01-01'],
        billing_period_ranges: [{ start: '2025-01-01T00:00:00.000Z', end: '2025-02-01T00:00:00.000Z' }],
        totals: [{ currency: 'USD', billed_cost: 12.5, effective_cost: 11.25 }],
        rows_replaced: 1,
        bytes: csv.length,
        duration_ms: 7,
        warnings: [
          {
            code: 'future_charges',
            message: '1 row is charged in the future',
            details: { rows: '1', latest_charge_period_start: '2099-01-01T00:00:00Z' },
          },
        ],
      },
    });
    expect(received.start).toMatchObject({
      connectionId: 'con_1',
      contentEncoding: 'identity',
      declaredBytes: BigInt(csv.length),
    });
    expect(received.teamId).toBe('team_1');
    expect(Buffer.concat(received.chunks).toString()).toBe(csv);
  });

  it('streams a multi-megabyte body as it arrives, without waiting for its end', async () => {
    const megabyte = Buffer.alloc(1024 * 1024, 'a');
    let sent = 0;
    // Sends 1 MiB, then the rest only once the costs service has bytes: a gateway that buffered the
    // whole body first would never see it arrive, and the request would time out.
    const body = Readable.from(
      (async function* () {
        yield megabyte;
        sent += megabyte.length;
        const waitedFrom = Date.now();
        while (received.bytes === 0) {
          if (Date.now() - waitedFrom > 5_000) throw new Error('the gateway did not stream the first MiB');
          await sleep(10);
        }
        for (let i = 0; i < 7; i++) {
          yield megabyte;
          sent += megabyte.length;
        }
      })(),
    );
    const response = await post(Readable.toWeb(body) as BodyInit, {
      'content-type': 'text/csv; charset=utf-8',
    });
    expect(response.status).toBe(200);
    expect(sent).toBe(8 * 1024 * 1024);
    expect(received.bytes).toBe(8 * 1024 * 1024);
    expect(received.chunks.every((chunk) => chunk.byteLength <= 256 * 1024)).toBe(true);
    expect(received.start!.declaredBytes).toBe(0n); // chunked: no Content-Length
  });

  it('keeps streaming past the body timeout while bytes keep coming (idle timeout, not a total one)', async () => {
    const body = Readable.from(
      (async function* () {
        for (let i = 0; i < 8; i++) {
          yield Buffer.from(`${i},${i},USD\n`);
          await sleep(150); // 1.2 s in all: over the 500 ms body timeout, under the 400 ms idle timeout each
        }
      })(),
    );
    const response = await post(Readable.toWeb(body) as BodyInit);
    expect(response.status).toBe(200);
    expect(Buffer.concat(received.chunks).toString()).toBe(
      Array.from({ length: 8 }, (_, i) => `${i},${i},USD\n`).join(''),
    );
  });

  it.each([
    ['text/csv with Content-Encoding: gzip', { 'content-type': 'text/csv', 'content-encoding': 'gzip' }],
    ['application/gzip', { 'content-type': 'application/gzip' }],
  ])('passes %s through compressed, for the costs service to decompress', async (_case, headers) => {
    const gzipped = gzipSync(csv);
    const response = await post(gzipped, headers);
    expect(response.status).toBe(200);
    expect(received.start!.contentEncoding).toBe('gzip');
    expect(Buffer.concat(received.chunks).equals(gzipped)).toBe(true);
  });

  it.each([
    ['application/json', { 'content-type': 'application/json' }, "Content-Type 'application/json'"],
    ['text/plain', { 'content-type': 'text/plain' }, "Content-Type 'text/plain'"],
    ['no Content-Type', {}, "Content-Type '(none)'"],
    ['text/csv in br', { 'content-type': 'text/csv', 'content-encoding': 'br' }, "Content-Encoding 'br'"],
    [
      'gzip twice',
      { 'content-type': 'application/gzip', 'content-encoding': 'gzip' },
      "Content-Encoding 'gzip'",
    ],
  ])(
    'answers 415 in the envelope to %s, without calling the costs service',
    async (_case, headers, message) => {
      // Bytes, not a string: fetch would add text/plain to a string body.
      const response = await post(Buffer.from('{"a":1}'), headers as Record<string, string>);
      expect(response.status).toBe(415);
      const body = (await response.json()) as { error: { code: string; message: string } };
      expect(body.error.code).toBe('bad_request');
      expect(body.error.message).toContain(message);
      expect(received.start).toBeUndefined();
    },
  );

  it('answers 413 at once to a declared Content-Length over the limit', async () => {
    const response = await post(Buffer.alloc(maxBytes + 1, 'a'));
    expect(response.status).toBe(413);
    expect(((await response.json()) as { error: { message: string } }).error.message).toMatch(
      /exceeds the limit of 8 MiB/,
    );
    expect(received.start).toBeUndefined();
  });

  it('answers 413 to a chunked body once it passes the limit, and cancels the call (nothing complete reaches the service)', async () => {
    const body = Readable.from(
      (async function* () {
        for (let i = 0; i < 12; i++) yield Buffer.alloc(1024 * 1024, 'b');
      })(),
    );
    const response = await post(Readable.toWeb(body) as BodyInit).catch((error: unknown) => error);
    expect(response).toBeInstanceOf(Response);
    expect((response as Response).status).toBe(413);
    await expect.poll(() => received.ended, { timeout: 5_000 }).toBeDefined();
    expect((received.ended as Error).name).toBe('UnavailableError');
  });

  it('answers 408 to an upload that stalls, and cancels the call', async () => {
    const body = Readable.from(
      (async function* () {
        yield Buffer.from(csv);
        await sleep(2_000);
        yield Buffer.from('never read\n');
      })(),
    );
    const response = await post(Readable.toWeb(body) as BodyInit);
    expect(response.status).toBe(408);
    expect(((await response.json()) as { error: { message: string } }).error.message).toMatch(
      /sent nothing for 0.4 s/,
    );
    await expect.poll(() => received.ended, { timeout: 5_000 }).toBeDefined();
  });

  it('cancels the call when the client goes away mid-upload', async () => {
    const port = (server.address() as AddressInfo).port;
    const req = httpRequest({
      port,
      host: '127.0.0.1',
      method: 'POST',
      path: '/v1/guard/connections/con_1/cost-data',
      headers: {
        authorization: `Bearer ${writer}`,
        'content-type': 'text/csv',
        'transfer-encoding': 'chunked',
      },
    });
    req.on('error', () => undefined);
    req.write(Buffer.alloc(64 * 1024, 'c'));
    await expect.poll(() => received.bytes, { timeout: 5_000 }).toBeGreaterThan(0);
    req.destroy();
    await expect.poll(() => received.ended, { timeout: 5_000 }).toBeDefined();
    expect((received.ended as Error).name).toBe('UnavailableError');
  });

  it.each([
    [
      'a refused file as 422 with row and column',
      new ValidationError(
        [
          { field: 'row 3, column BilledCost', message: "'abc' is not a number" },
          { field: 'row 7, column BillingCurrency', message: "'XYZ' is not an ISO 4217 currency" },
        ],
        'The file is not valid FOCUS: 2 errors.',
      ),
      422,
      'validation_error',
    ],
    ['an unknown connection as 404', new NotFoundError('Connection', 'con_x'), 404, 'not_found'],
    ['a disabled connection as 409', new ConflictError("Connection 'con_1' is disabled."), 409, 'conflict'],
  ])('answers %s', async (_case, error, status, code) => {
    upload = async (requests) => {
      for await (const request of requests) if (request.part.case === 'chunk') break;
      throw error;
    };
    const response = await post(csv);
    expect(response.status).toBe(status);
    expect(await response.json()).toEqual({
      error: { code, message: error.message, details: error.details },
    });
  });

  it('answers an early refusal while the client is still sending, and drops the rest of the body', async () => {
    upload = async (requests) => {
      for await (const request of requests) if (request.part.case === 'chunk') break;
      throw new ValidationError([{ field: 'row 1, column BilledCost', message: 'is missing' }]);
    };
    const body = Readable.from(
      (async function* () {
        for (let i = 0; i < 6; i++) yield Buffer.alloc(1024 * 1024, 'd');
      })(),
    );
    const response = await post(Readable.toWeb(body) as BodyInit);
    expect(response.status).toBe(422);
    expect(((await response.json()) as { error: { details: unknown[] } }).error.details).toEqual([
      { field: 'row 1, column BilledCost', message: 'is missing' },
    ]);
  });

  it('answers 503 with Retry-After when the costs service is down', async () => {
    const app = createGatewayApp({
      logger,
      openapi: loadOpenApiDocument(),
      auth: authenticator({ identityClient: identityStandIn as never, maxTtlMs: 30_000 }),
      limiter: createMemoryLimiter(),
      ...deadBackends(await freePort(), { deadlineMs: 500 }),
      backendsReady: async () => ({}),
      draining: () => false,
    });
    const down: Server = await new Promise((resolve) => {
      const s = app.listen(0, '127.0.0.1', () => resolve(s));
    });
    try {
      const response = await fetch(
        `http://127.0.0.1:${(down.address() as AddressInfo).port}/v1/guard/connections/con_1/cost-data`,
        {
          method: 'POST',
          headers: { authorization: `Bearer ${writer}`, 'content-type': 'text/csv' },
          body: csv,
        },
      );
      expect(response.status).toBe(503);
      expect(response.headers.get('retry-after')).toBe('1');
    } finally {
      await new Promise<void>((resolve) => down.close(() => resolve()));
    }
  });

  it('needs guard:write (403 for a read-only key) and a credential (401)', async () => {
    const readOnly = await post(csv, undefined, { credential: reader });
    expect(readOnly.status).toBe(403);
    const anonymous = await fetch(`${base}/v1/guard/connections/con_1/cost-data`, {
      method: 'POST',
      headers: { 'content-type': 'text/csv' },
      body: csv,
    });
    expect(anonymous.status).toBe(401);
    expect(received.start).toBeUndefined();
  });

  it('refuses a query parameter (400): the operation has none', async () => {
    const response = await post(csv, undefined, { query: '?dry_run=true' });
    expect(response.status).toBe(400);
    expect(await response.json()).toMatchObject({
      error: {
        code: 'bad_request',
        details: [{ field: 'dry_run', message: 'is not a parameter of this operation' }],
      },
    });
    expect(received.start).toBeUndefined();
  });

  it('refuses a path with control characters (400) before calling the costs service', async () => {
    const response = await post(csv, undefined, { id: 'con%00x' });
    expect(response.status).toBe(400);
    expect(received.start).toBeUndefined();
  });
});

describe('the gateway server (node http settings)', () => {
  it('lets an upload run longer than HEADERS_TIMEOUT_MS and BODY_TIMEOUT_MS while bytes keep coming', async () => {
    // Identity answers Authenticate; nothing else of it is called.
    const identityServer = createRpcServer({ logger });
    const unused = async (): Promise<never> => {
      throw new Error('not called');
    };
    identityServer.add(
      identity.IdentityService,
      new Proxy({} as ServiceImpl<typeof identity.IdentityService>, {
        get: (_target, name) => (name === 'authenticate' ? identityStandIn.authenticate : unused),
      }),
    );
    const identityPort = await identityServer.listen('127.0.0.1:0');
    const gateway = await startGateway(
      loadConfig(gatewayConfig, {
        PORT: '0',
        HOST: '127.0.0.1',
        RATE_LIMIT: 'off',
        IDENTITY_ADDR: `127.0.0.1:${identityPort}`,
        COSTS_ADDR: costsAddress,
        HEADERS_TIMEOUT_MS: '500',
        BODY_TIMEOUT_MS: '500',
        UPLOAD_IDLE_TIMEOUT_MS: '1000',
      }),
      logger,
    );
    try {
      const lines = Array.from({ length: 12 }, (_, i) => `${i},${i},USD\n`);
      const body = Readable.from(
        (async function* () {
          for (const line of lines) {
            yield Buffer.from(line);
            await sleep(200); // 2.4 s in all, a byte every 200 ms
          }
        })(),
      );
      const started = Date.now();
      const response = await fetch(`http://127.0.0.1:${gateway.port}/v1/guard/connections/con_1/cost-data`, {
        method: 'POST',
        headers: { authorization: `Bearer ${writer}`, 'content-type': 'text/csv' },
        body: Readable.toWeb(body) as BodyInit,
        duplex: 'half',
      } as RequestInit);
      expect(response.status).toBe(200);
      expect(Date.now() - started).toBeGreaterThan(2_000);
      expect(Buffer.concat(received.chunks).toString()).toBe(lines.join(''));
    } finally {
      await gateway.stop();
      await identityServer.shutdown(0);
    }
  });
});

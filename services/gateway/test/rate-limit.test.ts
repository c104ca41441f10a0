import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import express from 'express';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLogger } from '@costgov/log';
import { createMemoryLimiter } from '@costgov/ratelimit';
import type { Principal } from '../src/http/auth';
import { errorHandler } from '../src/http/errors';
import { rateLimit, renewLeaseUntilDone } from '../src/http/rate-limit';

const principal: Principal = {
  teamId: 'team_1',
  credentialId: 'key_ratelimittest',
  kind: 'api_key',
  scopes: ['guard:read'],
  plan: 'team',
  limits: { requestsPerMinute: 6_000, concurrentRequests: 1 },
};
let server: Server;
let url: string;
let hold: (() => void) | undefined;

beforeAll(async () => {
  const app = express();
  app.use((req, _res, next) => ((req.principal = principal), next()));
  app.use(rateLimit(createMemoryLimiter()));
  app.get('/quick', (_req, res) => void res.end('ok'));
  // Answers only when the test lets it, or never if the client leaves first.
  app.get('/held', (_req, res) => void (hold = () => res.end('late')));
  app.use(errorHandler(createLogger('test', 'silent')));
  server = app.listen(0, '127.0.0.1');
  await new Promise((resolve) => server.once('listening', resolve));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterAll(() => new Promise((resolve) => server.close(resolve)));

/** Polls until `ready`, for at most 5 s: a request's way to the handler can be slow on a loaded machine. */
const until = async (ready: () => boolean) => {
  const deadline = Date.now() + 5_000;
  while (!ready() && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 10));
};

describe('the concurrency slot of a request (1 allowed)', () => {
  it('is given back when the response finishes', async () => {
    for (let i = 0; i < 3; i++) expect((await fetch(`${url}/quick`)).status).toBe(200);
  });

  it('is held while a request is in flight, and given back when it ends', async () => {
    hold = undefined;
    const held = fetch(`${url}/held`);
    await until(() => hold !== undefined);
    expect((await fetch(`${url}/quick`)).status).toBe(429);
    hold!();
    expect((await held).status).toBe(200);
    expect((await fetch(`${url}/quick`)).status).toBe(200);
  });

  it('is given back when the client goes away before the answer', async () => {
    hold = undefined;
    const controller = new AbortController();
    const held = fetch(`${url}/held`, { signal: controller.signal }).catch(() => undefined);
    await until(() => hold !== undefined);
    controller.abort();
    await held;
    let status = 0;
    const deadline = Date.now() + 5_000;
    while (status !== 200 && Date.now() < deadline) {
      status = (await fetch(`${url}/quick`)).status;
      if (status !== 200) await new Promise((resolve) => setTimeout(resolve, 10));
    }
    expect(status).toBe(200);
  });
});

describe('the slot of a request that outlives its lease (a long upload)', () => {
  const leaseTtlMs = 300;
  let longServer: Server;
  let longUrl: string;

  beforeAll(async () => {
    const app = express();
    app.use((req, _res, next) => ((req.principal = principal), next()));
    app.use(rateLimit(createMemoryLimiter({ leaseTtlMs })));
    app.get('/quick', (_req, res) => void res.end('ok'));
    const slow = (renew: boolean) => (_req: express.Request, res: express.Response) => {
      if (renew) renewLeaseUntilDone(res, leaseTtlMs / 3);
      // Ends four TTLs after the probe at two: a probe running late on a loaded machine still finds it held.
      setTimeout(() => res.end('done'), 6 * leaseTtlMs);
    };
    app.get('/renewed', slow(true));
    app.get('/not-renewed', slow(false));
    app.use(errorHandler(createLogger('test', 'silent')));
    longServer = app.listen(0, '127.0.0.1');
    await new Promise((resolve) => longServer.once('listening', resolve));
    longUrl = `http://127.0.0.1:${(longServer.address() as AddressInfo).port}`;
  });

  afterAll(() => new Promise((resolve) => longServer.close(resolve)));

  it.each([
    ['renewed', 429],
    ['not-renewed', 200],
  ])('%s: a second request two lease TTLs in answers %i', async (path, second) => {
    const long = fetch(`${longUrl}/${path}`);
    await new Promise((resolve) => setTimeout(resolve, 2 * leaseTtlMs));
    expect((await fetch(`${longUrl}/quick`)).status).toBe(second);
    expect((await long).status).toBe(200);
    expect((await fetch(`${longUrl}/quick`)).status).toBe(200); // and the slot is back once it ended
  });
});

import type { AddressInfo } from 'node:net';
import type { Server } from 'node:http';
import { Writable } from 'node:stream';
import express from 'express';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { addLogContext, createLogger } from '@costgov/log';
import { startTelemetry } from '@costgov/telemetry';
import { accessLog } from '../src/http/access-log';
import type { Principal } from '../src/http/auth';
import { requestContext } from '../src/http/request-context';

// As instrument.ts does without an exporter: W3C context, no instrumentation.
delete process.env.OTEL_EXPORTER_OTLP_ENDPOINT;
const telemetry = startTelemetry('gateway');
const lines: Record<string, unknown>[] = [];
const sink = new Writable({
  write: (chunk, _enc, done) => {
    for (const line of chunk.toString().split('\n').filter(Boolean)) lines.push(JSON.parse(line) as never);
    done();
  },
});
const observed: { method: string; route: string; status: number; seconds: number }[] = [];
let server: Server;
let url: string;

beforeAll(async () => {
  const app = express();
  app.use(requestContext);
  app.use(
    accessLog(createLogger('gateway', 'info', sink), (labels, seconds) =>
      observed.push({ ...labels, seconds }),
    ),
  );
  app.get('/healthz', (_req, res) => void res.end('ok'));
  app.get('/teams/:team', (req, res) => {
    req.principal = { teamId: req.params.team } as Principal;
    addLogContext({ teamId: req.params.team });
    res.status(201).end();
  });
  app.get('/anonymous', (_req, res) => void res.status(401).end());
  app.get('/fails', (_req, res) => void res.status(503).end());
  app.get('/hangs', () => undefined); // never answers: the client gives up
  const things = express.Router();
  things.get('/', (_req, res) => void res.end());
  things.get('/:id', (_req, res) => void res.end());
  app.use('/things', things);
  server = app.listen(0, '127.0.0.1');
  await new Promise((resolve) => server.once('listening', resolve));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterAll(async () => {
  await new Promise((resolve) => server.close(resolve));
  await telemetry.shutdown();
});

async function lineOf(requestId: string) {
  for (let i = 0; i < 100; i++) {
    const line = lines.find((entry) => entry.request_id === requestId && entry.msg === 'request');
    if (line) return line;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  return undefined;
}

const get = (path: string, requestId: string, init: RequestInit = {}) =>
  fetch(`${url}${path}`, { ...init, headers: { 'x-request-id': requestId } });

describe('the access log', () => {
  it('writes request id, trace id, method, route pattern, status, duration and team, at info', async () => {
    await get('/teams/team_a?secret=x', 'req_accesslog00001');
    const line = await lineOf('req_accesslog00001');
    expect(line).toMatchObject({
      level: 'info',
      method: 'GET',
      route: '/teams/:team',
      status: 201,
      team_id: 'team_a',
    });
    expect(line!.trace_id).toMatch(/^[0-9a-f]{32}$/);
    expect(typeof line!.duration_ms).toBe('number');
    expect(JSON.stringify(line)).not.toContain('secret');
  });

  it('gives a request without a team none, whatever request ran before it on the connection', async () => {
    await get('/teams/team_b', 'req_accesslog00002');
    await get('/anonymous', 'req_accesslog00003');
    expect(await lineOf('req_accesslog00003')).toMatchObject({ status: 401, route: '/anonymous' });
    expect(await lineOf('req_accesslog00003')).not.toHaveProperty('team_id');
  });

  it('logs 5xx at error, and a request the client gave up as 499 at info, once', async () => {
    await get('/fails', 'req_accesslog00004');
    expect(await lineOf('req_accesslog00004')).toMatchObject({ level: 'error', status: 503 });
    await get('/hangs', 'req_accesslog00005', { signal: AbortSignal.timeout(100) }).catch(() => undefined);
    expect(await lineOf('req_accesslog00005')).toMatchObject({
      level: 'info',
      status: 499,
      route: '/hangs',
    });
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(lines.filter((line) => line.request_id === 'req_accesslog00005')).toHaveLength(1);
  });

  it('leaves probes out, and a route that matched nothing is "unmatched"', async () => {
    await get('/healthz', 'req_accesslog00006');
    await get('/nowhere', 'req_accesslog00007');
    expect(await lineOf('req_accesslog00007')).toMatchObject({ route: 'unmatched', status: 404 });
    expect(lines.find((line) => line.request_id === 'req_accesslog00006')).toBeUndefined();
  });

  it('measures every finished response, probes included, from the same listener', async () => {
    observed.length = 0;
    await get('/healthz', 'req_accesslog00008');
    await get('/teams/team_c', 'req_accesslog00009');
    await lineOf('req_accesslog00009');
    expect(observed).toMatchObject([
      { method: 'GET', route: '/healthz', status: 200 },
      { method: 'GET', route: '/teams/:team', status: 201 },
    ]);
    expect(observed[1]!.seconds).toBeGreaterThan(0);
  });

  it("names a router's root by its mount path, without a trailing slash (OpenTelemetry's http.route)", async () => {
    observed.length = 0;
    await get('/things/', 'req_accesslog00010');
    await get('/things/th_1', 'req_accesslog00011');
    expect(await lineOf('req_accesslog00010')).toMatchObject({ route: '/things' });
    expect(await lineOf('req_accesslog00011')).toMatchObject({ route: '/things/:id' });
    expect(observed.map((o) => o.route)).toEqual(['/things', '/things/:id']);
  });
});

import { createRequire } from 'node:module';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { context, propagation, SpanKind, trace } from '@opentelemetry/api';
import { InMemorySpanExporter, type ReadableSpan } from '@opentelemetry/sdk-trace-base';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventually } from '@costgov/testing';
import { serverSpanRouteNamer, untraced } from '../src/http-spans';
import { startTelemetry } from '../src/tracing';

/*
 * The HTTP instrumentation as every process installs it, exporting to memory: what its client and server
 * spans carry. Secrets are put where callers put them (userinfo, query) and must not come out.
 */

const exporter = new InMemorySpanExporter();
const sdk = startTelemetry('http-spans-test', { spanExporter: exporter });
// Loaded after the SDK started, as a process's main.ts does after instrument.ts.
const http = createRequire(join(process.cwd(), 'index.js'))('http') as typeof import('node:http');

const secrets = ['s3cret', 'pa55word', 'jane@example.com', 'jane%40example.com'];
const received: Array<{ url?: string; traceparent?: string }> = [];
const server = http.createServer((req, res) => {
  received.push({ url: req.url, traceparent: req.headers.traceparent as string | undefined });
  // What the gateway's access log does once it knows the route template.
  if (req.url?.startsWith('/v1/items/')) serverSpanRouteNamer()?.('/v1/items/:id');
  res.end('ok');
});
let base = '';

beforeAll(async () => {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  base = `127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(async () => {
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
  await sdk.shutdown();
});

const get = (url: string, headers: Record<string, string> = {}) =>
  new Promise<number>((resolve, reject) => {
    const req = http.request(url, { headers }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode ?? 0));
    });
    req.on('error', reject);
    req.end();
  });

/** Waits for the spans of one exchange: its client span (when traced) and the server's. */
async function spansOf(path: string): Promise<{ client?: ReadableSpan; server: ReadableSpan }> {
  return eventually(() => {
    const spans = exporter.getFinishedSpans();
    const server = spans.find((s) => s.kind === SpanKind.SERVER && s.attributes['url.path'] === path);
    if (!server) throw new Error(`no server span for ${path} yet`);
    const client = spans.find(
      (s) => s.kind === SpanKind.CLIENT && String(s.attributes['url.full']).includes(path),
    );
    return { client, server };
  }, 1_000);
}

const oldNames = /^(http\.(method|url|target|status_code|host|scheme|flavor|user_agent|status_text)|net\.)/;

describe('HTTP spans', () => {
  it('carry no query value or credential of an outgoing request, in stable attribute names', async () => {
    const status = await get(`http://user:pa55word@${base}/v1/items/itm_1?token=s3cret&page=2`);
    expect(status).toBe(200);
    const { client, server } = await spansOf('/v1/items/itm_1');
    expect(client?.attributes).toMatchObject({
      'url.full': `http://REDACTED:REDACTED@${base}/v1/items/itm_1?token=REDACTED&page=REDACTED`,
      'http.request.method': 'GET',
      'server.address': '127.0.0.1',
      'server.port': Number(base.split(':')[1]),
      'http.response.status_code': 200,
    });
    expect(server.attributes).toMatchObject({
      'url.path': '/v1/items/itm_1',
      'url.query': 'token=REDACTED&page=REDACTED',
      'url.scheme': 'http',
      'http.request.method': 'GET',
      'http.response.status_code': 200,
    });
    for (const span of [client!, server]) {
      expect(
        Object.keys(span.attributes).filter((key) => oldNames.test(key)),
        span.name,
      ).toEqual([]);
      const values = JSON.stringify(span.attributes);
      for (const secret of secrets) expect(values, span.name).not.toContain(secret);
    }
  });

  it('redact query values a client sends to a server (personal data, a misplaced key)', async () => {
    await get(`http://${base}/scim?filter=${encodeURIComponent('userName eq "jane@example.com"')}`);
    const { server } = await spansOf('/scim');
    expect(server.attributes['url.query']).toBe('filter=REDACTED');
    for (const secret of secrets) expect(JSON.stringify(server.attributes)).not.toContain(secret);
  });

  it('name a server span after the route its handler names (METHOD /route, http.route)', async () => {
    await get(`http://${base}/v1/items/itm_2`);
    await get(`http://${base}/elsewhere`);
    expect((await spansOf('/v1/items/itm_2')).server).toMatchObject({
      name: 'GET /v1/items/:id',
      attributes: expect.objectContaining({ 'http.route': '/v1/items/:id' }),
    });
    // Without a route the span keeps the method alone (the conventions' name for it).
    const other = (await spansOf('/elsewhere')).server;
    expect(other.name).toBe('GET');
    expect(other.attributes['http.route']).toBeUndefined();
  });

  it('are not recorded for a request made untraced, which still sends the trace its caller injected', async () => {
    const parent = trace.getTracer('test').startSpan('webhook deliver');
    const headers: Record<string, string> = {};
    propagation.inject(trace.setSpan(context.active(), parent), headers);
    await untraced(() => get(`http://${base}/hooks/T000/s3cret?token=s3cret`, headers));
    parent.end();
    const { client } = await spansOf('/hooks/T000/s3cret');
    expect(client).toBeUndefined();
    expect(received.at(-1)?.traceparent).toBe(headers.traceparent);
    expect(headers.traceparent).toContain(parent.spanContext().spanId);
  });
});

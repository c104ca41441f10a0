import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { run } from '../src';
import type { CliResult } from './cli';

// `check` against a gateway on a real socket that answers 429 or 503 on cue, as a shared key's rate
// limit or a restarting backend does: the CLI's real fetch, its real waits (Retry-After: 1, kept short).

const projectId = 'prj_retry';

interface Trouble {
  status: 429 | 503 | 500;
  /** The Retry-After header, if any. */
  retryAfter?: string;
}

interface Sent {
  method: string;
  path: string;
  idempotencyKey: string | undefined;
  body: string;
  at: number;
}

let server: Server;
let url: string;
let sent: Sent[];
/** Answers to give, in order, to the requests of a `METHOD path` before it is answered properly. */
let trouble: Map<string, Trouble[]>;
let requestIds = 0;

const scan = {
  id: 'scn_retry',
  project_id: projectId,
  status: 'completed',
  resources_scanned: 0,
  findings_count: 0,
  credits_used: 1,
  error: null,
  started_at: null,
  completed_at: null,
  created_at: '2026-01-01T00:00:00Z',
};

const emptyPage = { data: [], meta: { current_page: 1, per_page: 100, total_pages: 0, total_count: 0 } };

function answer(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}) {
  res.writeHead(status, { 'content-type': 'application/json', ...headers });
  res.end(JSON.stringify(body));
}

async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
  let body = '';
  for await (const chunk of req) body += chunk;
  const { pathname } = new URL(req.url!, url);
  sent.push({
    method: req.method!,
    path: pathname,
    idempotencyKey: req.headers['idempotency-key'] as string | undefined,
    body,
    at: Date.now(),
  });
  res.setHeader('x-request-id', `req_${++requestIds}`);
  const due = trouble.get(`${req.method} ${pathname}`)?.shift();
  if (due) {
    const code = { 429: 'rate_limited', 503: 'service_unavailable', 500: 'internal_error' }[due.status];
    return answer(
      res,
      due.status,
      { error: { code, message: `trouble ${due.status}`, details: [] } },
      due.retryAfter === undefined ? {} : { 'retry-after': due.retryAfter },
    );
  }
  if (req.method === 'GET' && pathname === `/v1/guard/projects/${projectId}`)
    return answer(res, 200, { data: { id: projectId, name: 'retry' } });
  if (req.method === 'GET' && ['/v1/guard/violations', '/v1/guard/findings'].includes(pathname))
    return answer(res, 200, emptyPage);
  if (req.method === 'POST' && pathname === '/v1/guard/scans') return answer(res, 201, { data: scan });
  if (req.method === 'GET' && pathname === `/v1/guard/scans/${scan.id}`)
    return answer(res, 200, { data: scan });
  answer(res, 404, { error: { code: 'not_found', message: `no ${pathname}`, details: [] } });
}

beforeAll(async () => {
  server = createServer((req, res) => void handle(req, res));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterAll(async () => {
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
});

beforeEach(() => {
  sent = [];
  trouble = new Map();
  requestIds = 0;
});

async function check(...argv: string[]): Promise<CliResult & { ms: number }> {
  const result = { stdout: '', stderr: '' };
  const started = Date.now();
  const code = await run(['check', '--project', projectId, ...argv], {
    stdout: { write: (text: string) => (result.stdout += text) },
    stderr: { write: (text: string) => (result.stderr += text) },
    env: { COSTGOV_URL: url, COSTGOV_API_KEY: 'cg_live_retry' },
  });
  return { code, ...result, ms: Date.now() - started };
}

const lines = (text: string) => text.split('\n').filter(Boolean);
const projectPath = `/v1/guard/projects/${projectId}`;

describe('check waits out a rate limit (429)', () => {
  it('as Retry-After asks, says each wait on stderr, and passes', async () => {
    trouble.set(`GET ${projectPath}`, [
      { status: 429, retryAfter: '1' },
      { status: 429, retryAfter: '1' },
    ]);
    const result = await check('--json');
    expect(result.code, result.stderr).toBe(0);
    expect(JSON.parse(result.stdout)).toMatchObject({ verdict: 'pass' });
    expect(lines(result.stderr)).toEqual([
      `GET ${projectPath} answered 429 (rate limited, request req_1); retrying in 1 s (Retry-After)`,
      `GET ${projectPath} answered 429 (rate limited, request req_2); retrying in 1 s (Retry-After)`,
    ]);
    const reads = sent.filter((s) => s.path === projectPath);
    expect(reads).toHaveLength(3);
    expect(reads[2]!.at - reads[0]!.at).toBeGreaterThanOrEqual(1900);
  });

  it('on any request of the check: a list page too', async () => {
    trouble.set('GET /v1/guard/findings', [{ status: 429, retryAfter: '1' }]);
    const result = await check('--quiet');
    expect(result).toMatchObject({ code: 0, stdout: 'pass\n' });
    expect(result.stderr).toMatch(/^GET \/v1\/guard\/findings answered 429 .*retrying in 1 s/);
  });
});

describe('check waits out an unavailable backend (503)', () => {
  it('as Retry-After asks, or 1 s without one, and passes', async () => {
    trouble.set(`GET ${projectPath}`, [{ status: 503, retryAfter: '1' }, { status: 503 }]);
    const result = await check();
    expect(result.code, result.stderr).toBe(0);
    expect(result.stdout).toMatch(/^PASS/m);
    expect(lines(result.stderr)).toEqual([
      `GET ${projectPath} answered 503 (service unavailable, request req_1); retrying in 1 s (Retry-After)`,
      `GET ${projectPath} answered 503 (service unavailable, request req_2); retrying in 1 s (no Retry-After)`,
    ]);
    expect(result.ms).toBeGreaterThanOrEqual(1900);
  });

  it('when --scan starts a scan: the POST carries an Idempotency-Key and its retry the same one', async () => {
    trouble.set('POST /v1/guard/scans', [{ status: 503, retryAfter: '1' }]);
    const result = await check('--scan', '--quiet');
    expect(result.code, result.stderr).toBe(0);
    const posts = sent.filter((s) => s.method === 'POST');
    expect(posts).toHaveLength(2);
    expect(posts[0]!.idempotencyKey).toMatch(/^[0-9a-f-]{36}$/);
    expect(posts[1]).toMatchObject({ idempotencyKey: posts[0]!.idempotencyKey, body: posts[0]!.body });
    expect(result.stderr).toContain('POST /v1/guard/scans answered 503');
  });
});

describe('check could not check (exit 2)', () => {
  it('when the waits would outlast --retry-for, naming the last status and request id', async () => {
    trouble.set(`GET ${projectPath}`, [
      { status: 429, retryAfter: '1' },
      { status: 429, retryAfter: '1' },
      { status: 429, retryAfter: '1' },
    ]);
    const result = await check('--retry-for', '1s', '--json');
    expect(result.code).toBe(2);
    const reason = `GET ${projectPath} answered 429 (rate limited, request req_2); gave up: 1 s waited, and 1 s more would pass --retry-for 1s: trouble 429`;
    // stdout keeps only the result: with --json, the check's error result.
    expect(JSON.parse(result.stdout)).toEqual({
      version: 1,
      verdict: 'error',
      project: { id: projectId },
      error: { message: reason },
    });
    expect(lines(result.stderr)).toEqual([
      `GET ${projectPath} answered 429 (rate limited, request req_1); retrying in 1 s (Retry-After)`,
      `error: could not check project ${projectId}: ${reason}`,
    ]);
    expect(sent).toHaveLength(2);
  });

  it('at once with --retry-for 0', async () => {
    trouble.set(`GET ${projectPath}`, [{ status: 503, retryAfter: '1' }]);
    const result = await check('--retry-for', '0');
    expect(result.code).toBe(2);
    expect(result.stderr).toBe(
      `error: could not check project ${projectId}: GET ${projectPath} answered 503 (service unavailable, request req_1), not retried (--retry-for 0): trouble 503\n`,
    );
    expect(sent).toHaveLength(1);
    expect(result.ms).toBeLessThan(1000); // what the Retry-After would have made it wait
  });

  it('at once on another server error (500), which a retry would not mend', async () => {
    trouble.set(`GET ${projectPath}`, [{ status: 500, retryAfter: '1' }]);
    const result = await check();
    expect(result.code).toBe(2);
    expect(result.stderr).toBe(`error: could not check project ${projectId}: trouble 500\n`);
    expect(sent).toHaveLength(1);
  });

  it.each([['-1s'], ['2'], ['1.5m'], ['1d'], ['25h'], ['soon']])('on --retry-for %j', async (value) => {
    const result = await check('--retry-for', value);
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(`'--retry-for <duration>' argument '${value}' is invalid`);
    expect(result.stderr).toMatch('Expected 0 (no retries) or a whole number of seconds, minutes or hours');
    expect(sent).toEqual([]);
  });
});

import { describe, expect, it } from 'vitest';
import { createGuardClient, retryingFetch, unwrap, type RetryNotice, type RetryOptions } from '../src/index';
import { retryAfterOf } from '../src/retry';

interface Answer {
  status: number;
  headers?: Record<string, string>;
}

/**
 * A gateway that gives the answers queued, in order, then 200 to everything; it records what was sent.
 * The sleep it hands out only writes the wait down, so no test here waits for real.
 */
function troubledGateway(queue: Answer[]) {
  const sent: Array<{ method: string; path: string; key: string | null; body: string }> = [];
  const waits: number[] = [];
  const notices: { waits: RetryNotice[]; gaveUp: RetryNotice[] } = { waits: [], gaveUp: [] };
  let ids = 0;
  const fetch = async (input: Request | string | URL, init?: RequestInit) => {
    const request = new Request(input, init);
    sent.push({
      method: request.method,
      path: new URL(request.url).pathname,
      key: request.headers.get('idempotency-key'),
      body: await request.text(),
    });
    const answer = queue.shift() ?? { status: 200 };
    const body =
      answer.status === 200
        ? { data: { id: 'prj_1', name: 'one' } }
        : { error: { code: 'x', message: 'no' } };
    return Response.json(body, {
      status: answer.status,
      headers: { 'x-request-id': `req_${++ids}`, ...answer.headers },
    });
  };
  const retrying = (options: Partial<RetryOptions> = {}) =>
    retryingFetch({
      budgetMs: 120_000,
      fetch: fetch as typeof globalThis.fetch,
      sleep: async (ms) => void waits.push(ms),
      onWait: (notice) => notices.waits.push(notice),
      onGiveUp: (notice) => notices.gaveUp.push(notice),
      ...options,
    });
  const client = (options: Partial<RetryOptions> = {}) =>
    createGuardClient({ baseUrl: 'http://gateway.test', apiKey: 'cg_live_key', fetch: retrying(options) });
  return { sent, waits, notices, retrying, client };
}

const getProject = (client: ReturnType<ReturnType<typeof troubledGateway>['client']>) =>
  client.GET('/v1/guard/projects/{id}', { params: { path: { id: 'prj_1' } } });

const after = (seconds: number, status = 429): Answer => ({
  status,
  headers: { 'retry-after': String(seconds) },
});

describe('retryingFetch on a GET', () => {
  it.each([429, 503])('waits out %i as Retry-After asks and answers what came next', async (status) => {
    const gateway = troubledGateway([after(1, status), after(2, status)]);
    const project = await unwrap(getProject(gateway.client()));
    expect(project.data.id).toBe('prj_1');
    expect(gateway.sent).toHaveLength(3);
    expect(gateway.waits).toEqual([1000, 2000]);
    expect(gateway.notices.waits).toMatchObject([
      {
        method: 'GET',
        status,
        requestId: 'req_1',
        waitMs: 1000,
        retryAfterMs: 1000,
        retries: 0,
        spentMs: 1000,
      },
      {
        method: 'GET',
        status,
        requestId: 'req_2',
        waitMs: 2000,
        retryAfterMs: 2000,
        retries: 1,
        spentMs: 3000,
      },
    ]);
    expect(gateway.notices.waits[0]!.url).toBe('http://gateway.test/v1/guard/projects/prj_1');
    expect(gateway.notices.gaveUp).toEqual([]);
  });

  it('backs off from 1 s, doubling, without a usable Retry-After (absent, unreadable, 0)', async () => {
    const gateway = troubledGateway([
      { status: 503 },
      { status: 503, headers: { 'retry-after': 'soon' } },
      { status: 429, headers: { 'retry-after': '0' } },
      after(5),
      { status: 503 },
    ]);
    await unwrap(getProject(gateway.client()));
    // The backoff doubles only when it is used: a Retry-After in between does not move it.
    expect(gateway.waits).toEqual([1000, 2000, 4000, 5000, 8000]);
    expect(gateway.notices.waits.map((n) => n.retryAfterMs)).toEqual([
      undefined,
      undefined,
      undefined,
      5000,
      undefined,
    ]);
  });

  it('cuts a long wait to maxWaitMs', async () => {
    const gateway = troubledGateway([after(3600, 503), { status: 503 }, { status: 503 }]);
    await unwrap(getProject(gateway.client({ maxWaitMs: 1500 })));
    expect(gateway.waits).toEqual([1500, 1000, 1500]);
    expect(gateway.notices.waits[0]).toMatchObject({ waitMs: 1500, retryAfterMs: 3_600_000 });
  });

  it('does not retry other statuses', async () => {
    for (const status of [400, 401, 404, 409, 500, 502, 504]) {
      const gateway = troubledGateway([{ status, headers: { 'retry-after': '1' } }]);
      const { response } = await getProject(gateway.client());
      expect(response.status).toBe(status);
      expect(gateway.sent).toHaveLength(1);
      expect(gateway.waits).toEqual([]);
    }
  });
});

describe('retryingFetch on a POST', () => {
  const scan = { project_id: 'prj_1' };

  it('retries one that carries an Idempotency-Key, with the same key and body', async () => {
    const gateway = troubledGateway([after(1, 503), after(1)]);
    const { response } = await gateway.client().POST('/v1/guard/scans', {
      params: { header: { 'Idempotency-Key': 'scan-1' } },
      body: scan,
    });
    expect(response.status).toBe(200);
    expect(gateway.sent).toHaveLength(3);
    for (const sent of gateway.sent)
      expect(sent).toEqual({
        method: 'POST',
        path: '/v1/guard/scans',
        key: 'scan-1',
        body: JSON.stringify(scan),
      });
  });

  it('does not retry one without an Idempotency-Key, which could act twice', async () => {
    const gateway = troubledGateway([after(1, 503)]);
    const { response } = await gateway.client().POST('/v1/guard/scans', { body: scan });
    expect(response.status).toBe(503);
    expect(gateway.sent).toHaveLength(1);
    expect(gateway.notices).toEqual({ waits: [], gaveUp: [] });
  });

  it('does not retry a PATCH or a DELETE', async () => {
    const gateway = troubledGateway([after(1), after(1)]);
    const client = gateway.client();
    const id = { params: { path: { id: 'prj_1' } } };
    expect(
      (await client.PATCH('/v1/guard/projects/{id}', { ...id, body: { name: 'x' } })).response.status,
    ).toBe(429);
    expect((await client.DELETE('/v1/guard/projects/{id}', id)).response.status).toBe(429);
    expect(gateway.sent).toHaveLength(2);
  });

  it('passes the arguments of a request it does not retry through untouched (a streamed body)', async () => {
    const gateway = troubledGateway([]);
    const body = new Blob(['BilledCost\n1\n']).stream();
    const response = await gateway.retrying()('http://gateway.test/v1/guard/connections/con_1/cost-data', {
      method: 'POST',
      body,
      duplex: 'half',
    } as RequestInit);
    expect(response.status).toBe(200);
    expect(gateway.sent[0]!.body).toBe('BilledCost\n1\n');
  });
});

describe('the budget', () => {
  it('is shared by every request: a wait that does not fit lets the answer through and says so', async () => {
    const gateway = troubledGateway([after(1), { status: 200 }, after(1), after(1)]);
    const client = gateway.client({ budgetMs: 2500 });
    await unwrap(getProject(client)); // waits 1 s
    const { response, error } = await getProject(client); // waits 1 s; 0.5 s left is not enough
    expect(response.status).toBe(429);
    expect(error).toEqual({ error: { code: 'x', message: 'no' } });
    expect(gateway.waits).toEqual([1000, 1000]);
    expect(gateway.notices.gaveUp).toMatchObject([
      { status: 429, requestId: 'req_4', waitMs: 1000, retries: 1, spentMs: 2000, budgetMs: 2500 },
    ]);
  });

  it('of 0 retries nothing', async () => {
    const gateway = troubledGateway([after(1, 503)]);
    const { response } = await getProject(gateway.client({ budgetMs: 0 }));
    expect(response.status).toBe(503);
    expect(gateway.sent).toHaveLength(1);
    expect(gateway.waits).toEqual([]);
    expect(gateway.notices.gaveUp).toMatchObject([{ status: 503, requestId: 'req_1', budgetMs: 0 }]);
  });
});

describe('a wait', () => {
  it('is cut short when the request is aborted', async () => {
    const controller = new AbortController();
    const call = retryingFetch({
      budgetMs: 60_000,
      fetch: async () => new Response(null, { status: 429, headers: { 'retry-after': '30' } }),
      onWait: () => controller.abort(new Error('stopped')),
    })('http://gateway.test/v1/guard/projects', { signal: controller.signal });
    await expect(call).rejects.toThrow('stopped');
  });
});

describe('retryAfterOf', () => {
  const now = Date.parse('2026-11-27T12:00:00Z');
  it.each([
    ['1', 1000],
    [' 30 ', 30_000],
    ['Fri, 27 Nov 2026 12:00:05 GMT', 5000],
    ['Fri, 27 Nov 2026 12:00:04 GMT', 4000],
    [null, undefined],
    ['0', undefined],
    ['-1', undefined],
    ['1.5', undefined],
    ['soon', undefined],
    ['Fri, 27 Nov 2026 11:59:00 GMT', undefined],
  ])('reads %j as %j ms', (value, ms) => {
    expect(retryAfterOf(value, now)).toBe(ms);
  });
});

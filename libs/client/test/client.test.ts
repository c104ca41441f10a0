import { describe, expect, expectTypeOf, it } from 'vitest';
import { createGuardClient, GuardApiError, listAll, unwrap, type components } from '../src/index';

type Project = components['schemas']['Project'];

/** A fetch that records each request and answers from a handler, as the gateway would. */
function fakeGateway(handler: (request: Request, body: string) => Response | Promise<Response>) {
  const requests: Array<{ method: string; url: string; headers: Headers; body: string }> = [];
  const fetch = async (input: Request | string | URL, init?: RequestInit) => {
    const request = new Request(input, init);
    const body = await request.text();
    requests.push({ method: request.method, url: request.url, headers: request.headers, body });
    return handler(request, body);
  };
  return { requests, fetch: fetch as typeof globalThis.fetch };
}

const json = (status: number, body: unknown, headers: Record<string, string> = {}) =>
  new Response(JSON.stringify(body), {
    status,
    headers: { 'content-type': 'application/json; charset=utf-8', ...headers },
  });

const project = (id: string): Project => ({
  id,
  name: id,
  status: 'active',
  connection_ids: [],
  budget_count: 0,
  violation_count: 0,
  created_at: '2026-01-01T00:00:00Z',
  updated_at: '2026-01-01T00:00:00Z',
});

describe('createGuardClient', () => {
  it('sends the API key as a bearer credential to the base URL, with the headers given', async () => {
    const gateway = fakeGateway(() => json(201, { data: project('prj_1') }));
    const client = createGuardClient({
      baseUrl: 'http://gateway.test:8080/',
      apiKey: 'cg_live_key',
      headers: { 'user-agent': 'pipeline/1.0' },
      fetch: gateway.fetch,
    });
    const { data } = await client.POST('/v1/guard/projects', { body: { name: 'checkout' } });
    expect(data?.data.id).toBe('prj_1');
    const [sent] = gateway.requests;
    expect(sent).toMatchObject({ method: 'POST', url: 'http://gateway.test:8080/v1/guard/projects' });
    expect(sent!.headers.get('authorization')).toBe('Bearer cg_live_key');
    expect(sent!.headers.get('user-agent')).toBe('pipeline/1.0');
    expect(sent!.headers.get('content-type')).toBe('application/json');
    expect(JSON.parse(sent!.body)).toEqual({ name: 'checkout' });
  });

  it('sends an Idempotency-Key only on the call that gives one', async () => {
    const gateway = fakeGateway(() => json(202, { data: {} }));
    const client = createGuardClient({
      baseUrl: 'http://gateway.test',
      apiKey: 'cg_live_key',
      fetch: gateway.fetch,
    });
    await client.POST('/v1/guard/scans', {
      params: { header: { 'Idempotency-Key': 'scan-2026-11-23' } },
      body: { project_id: 'prj_1' },
    });
    await client.POST('/v1/guard/scans', { body: { project_id: 'prj_1' } });
    expect(gateway.requests.map((r) => r.headers.get('idempotency-key'))).toEqual(['scan-2026-11-23', null]);
  });

  it('sends a body of another media type as it is (a CSV upload)', async () => {
    const gateway = fakeGateway(() => json(200, { data: {} }));
    const client = createGuardClient({ baseUrl: 'http://gateway.test', fetch: gateway.fetch });
    const csv = 'BilledCost,EffectiveCost\n1,1\n';
    await client.POST('/v1/guard/connections/{id}/cost-data', {
      params: { path: { id: 'con_1' } },
      headers: { 'content-type': 'text/csv' },
      body: csv,
    });
    const [sent] = gateway.requests;
    expect(sent!.url).toBe('http://gateway.test/v1/guard/connections/con_1/cost-data');
    expect(sent!.headers.get('content-type')).toBe('text/csv');
    expect(sent!.headers.get('authorization')).toBeNull();
    expect(sent!.body).toBe(csv);
  });
});

describe('unwrap', () => {
  it('gives the data of a 2xx answer', async () => {
    const gateway = fakeGateway(() => json(200, { data: project('prj_1') }));
    const client = createGuardClient({ baseUrl: 'http://gateway.test', fetch: gateway.fetch });
    const read = await unwrap(client.GET('/v1/guard/projects/{id}', { params: { path: { id: 'prj_1' } } }));
    expect(read.data.id).toBe('prj_1');
    const deleted = await unwrap(
      client.DELETE('/v1/guard/projects/{id}', { params: { path: { id: 'prj_1' } } }),
    );
    expectTypeOf(deleted).toEqualTypeOf<undefined>();
  });

  it('throws the error envelope as a GuardApiError with status, code, details, request id and Retry-After', async () => {
    const envelope = {
      error: {
        code: 'validation_error',
        message: 'The request body failed validation.',
        details: [{ field: 'name', message: 'is required' }],
      },
    };
    const gateway = fakeGateway(() => json(422, envelope, { 'x-request-id': 'req_1', 'retry-after': '3' }));
    const client = createGuardClient({ baseUrl: 'http://gateway.test', fetch: gateway.fetch });
    const error = await unwrap(client.POST('/v1/guard/projects', { body: { name: '' } })).catch(
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(GuardApiError);
    expect(error).toMatchObject({
      name: 'GuardApiError',
      status: 422,
      code: 'validation_error',
      message: 'The request body failed validation.',
      details: [{ field: 'name', message: 'is required' }],
      requestId: 'req_1',
      retryAfterSeconds: 3,
      body: envelope,
    });
  });

  it('throws code unknown with the text when the answer is not the envelope (a proxy page)', async () => {
    const gateway = fakeGateway(() => new Response('<html>Bad Gateway</html>', { status: 502 }));
    const client = createGuardClient({ baseUrl: 'http://gateway.test', fetch: gateway.fetch });
    const error = (await unwrap(client.GET('/v1/guard/projects')).catch((e: unknown) => e)) as GuardApiError;
    expect(error).toMatchObject({
      status: 502,
      code: 'unknown',
      details: [],
      body: '<html>Bad Gateway</html>',
    });
    expect(error.message).toContain('HTTP 502');
    expect(error.retryAfterSeconds).toBeUndefined();
  });
});

describe('listAll', () => {
  /** 5 projects served 2 per page, whatever page size is asked for, so the test sees several pages. */
  const pagedGateway = (total: number, failOnPage?: number) =>
    fakeGateway((request) => {
      const url = new URL(request.url);
      const page = Number(url.searchParams.get('page'));
      if (page === failOnPage)
        return json(503, { error: { code: 'service_unavailable', message: 'down', details: [] } });
      const perPage = 2;
      const ids = Array.from({ length: total }, (_, i) => `prj_${i + 1}`);
      return json(200, {
        data: ids.slice((page - 1) * perPage, page * perPage).map(project),
        meta: {
          current_page: page,
          per_page: perPage,
          total_pages: Math.ceil(total / perPage),
          total_count: total,
        },
      });
    });

  it('yields every item of every page, asking 100 a page and passing the filters', async () => {
    const gateway = pagedGateway(5);
    const client = createGuardClient({ baseUrl: 'http://gateway.test', fetch: gateway.fetch });
    const seen: string[] = [];
    for await (const item of listAll(client, '/v1/guard/projects', { query: { status: 'active' } })) {
      expectTypeOf(item).toEqualTypeOf<Project>();
      seen.push(item.id);
    }
    expect(seen).toEqual(['prj_1', 'prj_2', 'prj_3', 'prj_4', 'prj_5']);
    expect(gateway.requests.map((r) => new URL(r.url).search)).toEqual([
      '?per_page=100&status=active&page=1',
      '?per_page=100&status=active&page=2',
      '?per_page=100&status=active&page=3',
    ]);
  });

  it('asks once for an empty list, and keeps a per_page given', async () => {
    const gateway = pagedGateway(0);
    const client = createGuardClient({ baseUrl: 'http://gateway.test', fetch: gateway.fetch });
    const items = [];
    for await (const item of listAll(client, '/v1/guard/projects', { query: { per_page: 10 } }))
      items.push(item);
    expect(items).toEqual([]);
    expect(gateway.requests.map((r) => new URL(r.url).search)).toEqual(['?per_page=10&page=1']);
  });

  it('throws a GuardApiError when a page fails, after the items before it', async () => {
    const gateway = pagedGateway(5, 2);
    const client = createGuardClient({ baseUrl: 'http://gateway.test', fetch: gateway.fetch });
    const seen: string[] = [];
    const failure = await (async () => {
      for await (const item of listAll(client, '/v1/guard/projects')) seen.push(item.id);
    })().catch((e: unknown) => e);
    expect(seen).toEqual(['prj_1', 'prj_2']);
    expect(failure).toMatchObject({ status: 503, code: 'service_unavailable' });
  });
});

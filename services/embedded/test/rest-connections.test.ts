import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import type { RunningSystem } from '../src/system';
import { expectError, restCaller, startRestSystem } from './support/rest';

const bootstrapKey = 'cg_live_restconnectionsbootstrapkey000000000';
const call = restCaller(() => system.url, bootstrapKey);
let system: RunningSystem;
let otherTeamKey: string;
let readOnlyKey: string;

beforeAll(async () => {
  ({ system, otherTeamKey, readOnlyKey } = await startRestSystem(bootstrapKey));
});

afterAll(() => system?.stop());

describe('REST /v1/guard/connections through the gateway (extension)', () => {
  it('creates, reads, lists, updates and deletes a connection', async () => {
    const created = await call('POST', '/v1/guard/connections', {
      body: { name: 'aws-prod', provider: 'aws' },
    });
    expect(created.status).toBe(201);
    const connection = created.body.data;
    expect(connection).toEqual({
      id: expect.stringMatching(/^con_/),
      name: 'aws-prod',
      provider: 'aws',
      status: 'active',
      last_ingested_at: null,
      created_at: expect.any(String),
      updated_at: connection.created_at,
    });
    expect(created.headers.get('location')).toBe(`/v1/guard/connections/${connection.id}`);

    const read = await call('GET', `/v1/guard/connections/${connection.id}`);
    expect(read.status).toBe(200);
    expect(read.body.data).toEqual(connection);

    const listed = await call('GET', '/v1/guard/connections');
    expect(listed.status).toBe(200);
    expect(listed.body.data.map((c: { id: string }) => c.id)).toContain(connection.id);

    const patched = await call('PATCH', `/v1/guard/connections/${connection.id}`, {
      body: { name: 'aws-production', status: 'disabled' },
    });
    expect(patched.status).toBe(200);
    expect(patched.body.data).toMatchObject({
      id: connection.id,
      name: 'aws-production',
      status: 'disabled',
    });
    expect(Date.parse(patched.body.data.updated_at)).toBeGreaterThanOrEqual(
      Date.parse(connection.updated_at),
    );
    const unchanged = await call('PATCH', `/v1/guard/connections/${connection.id}`, { body: {} });
    expect(unchanged.body.data).toEqual(patched.body.data);

    const deleted = await call('DELETE', `/v1/guard/connections/${connection.id}`);
    expect(deleted.status).toBe(204);
    expectError(await call('GET', `/v1/guard/connections/${connection.id}`), 404, 'not_found');
    expectError(await call('DELETE', `/v1/guard/connections/${connection.id}`), 404, 'not_found');
  });

  it('takes a deleted connection out of the projects that listed it, and only that one', async () => {
    const create = async (name: string) =>
      (await call('POST', '/v1/guard/connections', { body: { name, provider: 'gcp' } })).body.data
        .id as string;
    const [gone, kept] = [await create('gcp-gone'), await create('gcp-kept')];
    const project = (
      await call('POST', '/v1/guard/projects', { body: { name: 'uses-gcp', connection_ids: [gone, kept] } })
    ).body.data;
    expect(project.connection_ids).toEqual([gone, kept]);

    expect((await call('DELETE', `/v1/guard/connections/${gone}`)).status).toBe(204);
    await vi.waitFor(
      async () => {
        const read = await call('GET', `/v1/guard/projects/${project.id}`);
        expect(read.body.data.connection_ids).toEqual([kept]);
      },
      { timeout: 10_000, interval: 50 },
    );
    // The project can be saved again with what it lists: no dangling id makes its PATCH a 422.
    const patched = await call('PATCH', `/v1/guard/projects/${project.id}`, { body: { name: 'uses-gcp-2' } });
    expect(patched.status).toBe(200);
    expect(patched.body.data.connection_ids).toEqual([kept]);
  });

  it('answers 409 for a name the team already uses, in any case', async () => {
    expect(
      (await call('POST', '/v1/guard/connections', { body: { name: 'Azure EA', provider: 'azure' } })).status,
    ).toBe(201);
    const duplicate = await call('POST', '/v1/guard/connections', {
      body: { name: 'azure ea', provider: 'azure' },
    });
    expectError(duplicate, 409, 'conflict');
    const other = await call('POST', '/v1/guard/connections', {
      key: otherTeamKey,
      body: { name: 'azure ea', provider: 'azure' },
    });
    expect(other.status).toBe(201);
  });

  it.each([
    ['no provider', { name: 'x' }, 'provider'],
    ['an unknown provider', { name: 'x', provider: 'ibm' }, 'provider'],
    ['an empty name', { name: '', provider: 'aws' }, 'name'],
    ['a name of 201 characters', { name: 'n'.repeat(201), provider: 'aws' }, 'name'],
    ['an unknown field', { name: 'x', provider: 'aws', region: 'eu' }, 'region'],
  ])('refuses a body with %s (422 naming the field) and stores nothing', async (_case, body, field) => {
    const before = (await call('GET', '/v1/guard/connections')).body.meta.total_count;
    const reply = await call('POST', '/v1/guard/connections', { body });
    expectError(reply, 422, 'validation_error');
    expect(JSON.stringify(reply.body.error.details)).toContain(field);
    expect((await call('GET', '/v1/guard/connections')).body.meta.total_count).toBe(before);
  });

  it('refuses a bad status on PATCH with 422', async () => {
    const { body } = await call('POST', '/v1/guard/connections', {
      body: { name: 'gcp-billing', provider: 'gcp' },
    });
    expectError(
      await call('PATCH', `/v1/guard/connections/${body.data.id}`, { body: { status: 'paused' } }),
      422,
      'validation_error',
    );
    expect((await call('GET', `/v1/guard/connections/${body.data.id}`)).body.data.status).toBe('active');
  });

  it('filters by provider and status and pages with meta arithmetic', async () => {
    for (let i = 0; i < 5; i++)
      await call('POST', '/v1/guard/connections', { body: { name: `oci-${i}`, provider: 'oci' } });
    const page = await call('GET', '/v1/guard/connections?provider=oci&per_page=2&page=2');
    expect(page.status).toBe(200);
    expect(page.body.data.map((c: { name: string }) => c.name)).toEqual(['oci-2', 'oci-1']);
    expect(page.body.meta).toEqual({ current_page: 2, per_page: 2, total_pages: 3, total_count: 5 });
    const disabled = await call('GET', '/v1/guard/connections?provider=oci&status=disabled');
    expect(disabled.body.data).toEqual([]);
    expect(disabled.body.meta.total_count).toBe(0);
  });

  it.each([
    ['page=0', 'page=0'],
    ['per_page=101', 'per_page=101'],
    ['page not a number', 'page=abc'],
    ['an unknown provider', 'provider=ibm'],
    ['an unknown status', 'status=paused'],
  ])('answers 400 to %s', async (_case, query) => {
    expectError(await call('GET', `/v1/guard/connections?${query}`), 400, 'bad_request');
  });

  it("answers 404 for another team's connection on read, update and delete, and does not list it", async () => {
    const theirs = (
      await call('POST', '/v1/guard/connections', {
        key: otherTeamKey,
        body: { name: 'private', provider: 'aws' },
      })
    ).body.data;
    expectError(await call('GET', `/v1/guard/connections/${theirs.id}`), 404, 'not_found');
    expectError(
      await call('PATCH', `/v1/guard/connections/${theirs.id}`, { body: { name: 'taken over' } }),
      404,
      'not_found',
    );
    expectError(await call('DELETE', `/v1/guard/connections/${theirs.id}`), 404, 'not_found');
    const mine = await call('GET', '/v1/guard/connections?per_page=100');
    expect(mine.body.data.map((c: { id: string }) => c.id)).not.toContain(theirs.id);
    expect(
      (await call('GET', `/v1/guard/connections/${theirs.id}`, { key: otherTeamKey })).body.data,
    ).toEqual(theirs);
  });

  it('lets a read-only key list but not create (403)', async () => {
    expect((await call('GET', '/v1/guard/connections', { key: readOnlyKey })).status).toBe(200);
    expectError(
      await call('POST', '/v1/guard/connections', {
        key: readOnlyKey,
        body: { name: 'ro', provider: 'aws' },
      }),
      403,
      'forbidden',
    );
  });
});

import { request } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { scim } from '@costgov/contracts';
import { createRpcClient } from '@costgov/rpc';
import { eventually } from '@costgov/testing';
import type { RunningSystem } from '../src/system';
import { expectError, restCaller, startRestSystem } from './support/rest';

const bootstrapKey = 'cg_live_resttestbootstrapkey0000000000000000';
const call = restCaller(() => system.url, bootstrapKey);
let system: RunningSystem;
let otherTeamKey: string;
let readOnlyKey: string;
/** An active SCIM user of the bootstrap team: approvers must be users of the team. */
let approver: string;

beforeAll(async () => {
  ({ system, otherTeamKey, readOnlyKey } = await startRestSystem(bootstrapKey));
  const identityPort = system.services.find((s) => s.name === 'identity')!.port;
  const scimClient = createRpcClient(scim.ScimService, `127.0.0.1:${identityPort}`);
  const user = await scimClient.createUser(
    {
      bodyJson: Buffer.from(
        JSON.stringify({
          schemas: ['urn:ietf:params:scim:schemas:core:2.0:User'],
          userName: 'approver@example.com',
        }),
      ),
      baseUrl: 'http://localhost/scim/v2',
    },
    { teamId: system.bootstrap!.teamId },
  );
  approver = (JSON.parse(Buffer.from(user.resourceJson).toString()) as { id: string }).id;
  scimClient.close();
});

afterAll(() => system?.stop());

describe('REST /v1/guard/projects through the gateway', () => {
  describe('authentication', () => {
    it.each([
      ['no credential', null],
      ['an unknown key', 'cg_live_unknownunknownunknownunknown0000'],
      ['a malformed header', 'not a bearer'],
    ])('answers 401 to %s, with WWW-Authenticate', async (_case, key) => {
      const reply =
        key === 'not a bearer'
          ? await call('GET', '/v1/guard/projects', { key: null, headers: { authorization: 'Basic abc' } })
          : await call('GET', '/v1/guard/projects', { key });
      expectError(reply, 401, 'unauthorized');
      expect(reply.headers.get('www-authenticate')).toMatch(/^Bearer/);
    });

    it('answers 403 to a write with a read-only key, and lets it read', async () => {
      expectError(
        await call('POST', '/v1/guard/projects', { key: readOnlyKey, body: { name: 'nope' } }),
        403,
        'forbidden',
      );
      expect((await call('GET', '/v1/guard/projects', { key: readOnlyKey })).status).toBe(200);
    });
  });

  describe('lifecycle', () => {
    it('creates, lists, reads, updates and deletes a project', async () => {
      const created = await call('POST', '/v1/guard/projects', {
        body: {
          name: 'checkout',
          connection_ids: [],
          approval_rules: { require_approval_above: 1000, approvers: [approver] },
        },
      });
      expect(created.status).toBe(201);
      const id = created.body.data.id as string;
      expect(created.headers.get('location')).toBe(`/v1/guard/projects/${id}`);
      expect(created.body.data).toMatchObject({
        name: 'checkout',
        status: 'active',
        connection_ids: [],
        budget_count: 0,
        violation_count: 0,
        budgets: [],
        approval_rules: { require_approval_above: 1000, approvers: [approver] },
      });
      expect(new Date(created.body.data.created_at).toISOString()).toBe(created.body.data.created_at);

      const list = await call('GET', '/v1/guard/projects?status=active&per_page=10');
      expect(list.status).toBe(200);
      expect(list.body.data.map((p: { id: string }) => p.id)).toContain(id);
      expect(list.body.meta).toMatchObject({
        current_page: 1,
        per_page: 10,
        total_pages: 1,
        total_count: list.body.data.length,
      });
      expect(list.body.data[0]).not.toHaveProperty('approval_rules');

      const read = await call('GET', `/v1/guard/projects/${id}`);
      expect(read.status).toBe(200);
      expect(read.body.data).toMatchObject({ id, budgets: [], approval_rules: { approvers: [approver] } });

      const patched = await call('PATCH', `/v1/guard/projects/${id}`, {
        body: { name: 'checkout-v2', status: 'archived', approval_rules: null },
      });
      expect(patched.status).toBe(200);
      expect(patched.body.data).toMatchObject({
        name: 'checkout-v2',
        status: 'archived',
        approval_rules: null,
      });
      const archived = await call('GET', '/v1/guard/projects?status=archived');
      expect(archived.body.data.map((p: { id: string }) => p.id)).toEqual([id]);

      const deleted = await fetch(`${system.url}/v1/guard/projects/${id}`, {
        method: 'DELETE',
        headers: { authorization: `Bearer ${bootstrapKey}` },
      });
      expect(deleted.status).toBe(204);
      expect(await deleted.text()).toBe('');
      expectError(await call('GET', `/v1/guard/projects/${id}`), 404, 'not_found');

      // The violations service consumes project.deleted and records the purge once.
      const violations = system.services.find((s) => s.name === 'violations')!;
      const purge = await eventually(async () => {
        const { rows } = await violations.db.query<{ project_id: string }>(
          'SELECT project_id FROM project_purges WHERE project_id = $1',
          [id],
        );
        return rows[0];
      });
      expect(purge.project_id).toBe(id);
    });

    it('answers 409 to a duplicate name', async () => {
      expect((await call('POST', '/v1/guard/projects', { body: { name: 'dup' } })).status).toBe(201);
      const again = await call('POST', '/v1/guard/projects', { body: { name: 'DUP' } });
      expectError(again, 409, 'conflict');
      expect(again.body.error.details).toEqual([{ field: 'name', message: 'is taken' }]);
    });
  });

  describe('bad input changes nothing', () => {
    it.each([
      ['malformed JSON', { raw: '{"name": ' }, 400, 'bad_request'],
      ['a wrong type', { body: { name: 42 } }, 422, 'validation_error'],
      ['a missing name', { body: { connection_ids: [] } }, 422, 'validation_error'],
      ['an unknown field', { body: { name: 'x', colour: 'red' } }, 422, 'validation_error'],
      ['a blank name', { body: { name: '  ' } }, 422, 'validation_error'],
      [
        'approval rules of the wrong shape',
        { body: { name: 'y', approval_rules: { approvers: 'me' } } },
        422,
        'validation_error',
      ],
      ['a body over 1 MiB', { body: { name: 'z'.repeat(1_100_000) } }, 413, 'bad_request'],
    ])('answers %s with the envelope', async (_case, options, status, code) => {
      const before = (await call('GET', '/v1/guard/projects?per_page=100')).body.meta.total_count;
      const reply = await call('POST', '/v1/guard/projects', options);
      expectError(reply, status, code);
      if (status === 422) expect(reply.body.error.details.length).toBeGreaterThan(0);
      expect((await call('GET', '/v1/guard/projects?per_page=100')).body.meta.total_count).toBe(before);
    });

    it.each([
      ['per_page over 100', '?per_page=500'],
      ['per_page zero', '?per_page=0'],
      ['page zero', '?page=0'],
      ['a non-numeric page', '?page=two'],
      ['an unknown status', '?status=deleted'],
      ['an unknown parameter', '?colour=red'],
    ])('answers 400 to %s', async (_case, query) => {
      const reply = await call('GET', `/v1/guard/projects${query}`);
      expectError(reply, 400, 'bad_request');
      expect(reply.body.error.details.length).toBeGreaterThan(0);
    });

    it('answers 404 to unknown routes and methods, with the envelope', async () => {
      expectError(await call('GET', '/v1/guard/nothing-here'), 404, 'not_found');
      expectError(await call('PUT', '/v1/guard/projects/prj_x', { body: { name: 'x' } }), 404, 'not_found');
      expectError(await call('GET', '/nowhere', { key: null }), 404, 'not_found');
    });
  });

  describe('tenant isolation', () => {
    it("answers 404 to another team's id on every route and changes nothing", async () => {
      const mine = (await call('POST', '/v1/guard/projects', { body: { name: 'private' } })).body.data;
      expectError(
        await call('GET', `/v1/guard/projects/${mine.id}`, { key: otherTeamKey }),
        404,
        'not_found',
      );
      expectError(
        await call('PATCH', `/v1/guard/projects/${mine.id}`, {
          key: otherTeamKey,
          body: { name: 'mine now' },
        }),
        404,
        'not_found',
      );
      expectError(
        await call('DELETE', `/v1/guard/projects/${mine.id}`, { key: otherTeamKey }),
        404,
        'not_found',
      );
      const theirs = await call('GET', '/v1/guard/projects', { key: otherTeamKey });
      expect(theirs.body.data.map((p: { id: string }) => p.id)).not.toContain(mine.id);
      expect((await call('GET', `/v1/guard/projects/${mine.id}`)).body.data.name).toBe('private');
    });
  });

  describe('operational endpoints', () => {
    it('echoes a sane X-Request-Id and makes one otherwise', async () => {
      const echoed = await call('GET', '/v1/guard/projects', {
        headers: { 'x-request-id': 'ci-run-12345678' },
      });
      expect(echoed.headers.get('x-request-id')).toBe('ci-run-12345678');
      const made = await call('GET', '/v1/guard/projects', {
        headers: { 'x-request-id': 'bad id with spaces' },
      });
      expect(made.headers.get('x-request-id')).toMatch(/^req_[0-9a-f]{32}$/);
    });

    it('serves health, readiness and the OpenAPI document without a credential', async () => {
      expect((await call('GET', '/healthz', { key: null })).status).toBe(200);
      const ready = await call('GET', '/readyz', { key: null });
      expect(ready.body).toEqual({
        status: 'ready',
        backends: {
          identity: true,
          budgets: true,
          violations: true,
          costs: true,
          scanner: true,
          notifier: true,
        },
      });
      const doc = await call('GET', '/v1/openapi.json', { key: null });
      expect(doc.body.openapi).toMatch(/^3\.1/);
      expect(doc.body.paths).toHaveProperty('/v1/guard/projects');
    });
  });
});

describe('graceful stop', () => {
  it('finishes a request in flight, refuses new connections and fails readiness meanwhile', async () => {
    const { port } = new URL(system.url);
    const body = JSON.stringify({ name: 'in-flight' });
    const answer = new Promise<{ status: number; body: string }>((resolve, reject) => {
      const req = request(
        {
          host: '127.0.0.1',
          port: Number(port),
          method: 'POST',
          path: '/v1/guard/projects',
          headers: {
            authorization: `Bearer ${bootstrapKey}`,
            'content-type': 'application/json',
            'content-length': Buffer.byteLength(body),
          },
        },
        (res) => {
          let text = '';
          res.on('data', (chunk: Buffer) => (text += chunk.toString()));
          res.on('end', () => resolve({ status: res.statusCode!, body: text }));
        },
      );
      req.on('error', reject);
      req.write(body.slice(0, 5)); // the request is in flight, its body half sent
      setTimeout(() => {
        const stopping = system.gateway.stop();
        setTimeout(() => req.end(body.slice(5)), 200);
        void stopping;
      }, 100);
    });
    const finished = await answer;
    expect(finished.status).toBe(201);
    expect(JSON.parse(finished.body).data.name).toBe('in-flight');
    await expect(fetch(`${system.url}/healthz`)).rejects.toThrow();
  });
});

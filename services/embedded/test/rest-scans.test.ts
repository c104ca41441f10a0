import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { identity } from '@costgov/contracts';
import { createRpcClient, type RpcClient } from '@costgov/rpc';
import { eventually } from '@costgov/testing';
import type { RunningSystem } from '../src/system';
import { expectError, restCaller, startRestSystem } from './support/rest';

const bootstrapKey = 'cg_live_restscansbootstrapkey000000000000000';
const call = restCaller(() => system.url, bootstrapKey);
let system: RunningSystem;
let teamId: string;
let readOnlyKey: string;
let identityClient: RpcClient<typeof identity.IdentityService>;
/** guard:read, guard:write and scans:write of another team. */
let otherScanKey: string;
/** guard:read and guard:write of the bootstrap team, without scans:write. */
let writeOnlyKey: string;

beforeAll(async () => {
  ({ system, teamId, readOnlyKey } = await startRestSystem(bootstrapKey));
  const identityPort = system.services.find((s) => s.name === 'identity')!.port;
  identityClient = createRpcClient(identity.IdentityService, `127.0.0.1:${identityPort}`);
  const other = await identityClient.createTeam({ name: 'other-scanner', plan: 'team' });
  await identityClient.grantScanCredits({ teamId: other.id, credits: 10n });
  otherScanKey = (
    await identityClient.createApiKey(
      { name: 'ci', scopes: ['guard:read', 'guard:write', 'scans:write'] },
      { teamId: other.id },
    )
  ).secret;
  writeOnlyKey = (
    await identityClient.createApiKey({ name: 'writer', scopes: ['guard:read', 'guard:write'] }, { teamId })
  ).secret;
});

afterAll(async () => {
  identityClient?.close();
  await system?.stop();
});

const balance = async () => Number((await identityClient.getTeam({ id: teamId })).scanCredits);
const newProject = async (name: string) =>
  (await call('POST', '/v1/guard/projects', { body: { name } })).body.data.id as string;

describe('REST /v1/guard/scans through the gateway', () => {
  it('answers 202 with the scan pending and Location, then a worker completes it; read carries findings', async () => {
    await identityClient.grantScanCredits({ teamId, credits: 5n });
    const before = await balance();
    const projectId = await newProject('scanned');
    const reply = await call('POST', '/v1/guard/scans', { body: { project_id: projectId } });
    expect(reply.status, reply.text).toBe(202);
    const scan = reply.body.data;
    expect(scan).toMatchObject({
      project_id: projectId,
      status: 'pending',
      resources_scanned: 0,
      findings_count: 0,
      credits_used: 1,
      error: null,
      started_at: null,
      completed_at: null,
    });
    expect(scan.id).toMatch(/^scn_/);
    expect(reply.headers.get('location')).toBe(`/v1/guard/scans/${scan.id}`);
    expect(await balance()).toBe(before - 1);

    const done = await eventually(async () => {
      const read = await call('GET', `/v1/guard/scans/${scan.id}`);
      return read.body.data.status === 'completed' ? read : undefined;
    });
    expect(done.status).toBe(200);
    expect(done.body.data).toMatchObject({ id: scan.id, status: 'completed', findings: [] });
    expect(done.body.data.started_at).toEqual(expect.any(String));
    expect(done.body.data.completed_at).toEqual(expect.any(String));
  });

  it('lists newest first with project_id and status filters and pagination', async () => {
    await identityClient.grantScanCredits({ teamId, credits: 5n });
    const projectId = await newProject('listed');
    const ids: string[] = [];
    for (let i = 0; i < 3; i++) {
      ids.push((await call('POST', '/v1/guard/scans', { body: { project_id: projectId } })).body.data.id);
    }
    const page = await call('GET', `/v1/guard/scans?project_id=${projectId}&per_page=2&page=1`);
    expect(page.status).toBe(200);
    expect(page.body.data.map((s: { id: string }) => s.id)).toEqual([ids[2], ids[1]]);
    expect(page.body.meta).toEqual({ current_page: 1, per_page: 2, total_pages: 2, total_count: 3 });
    expect(page.body.data[0]).not.toHaveProperty('findings');
    await eventually(async () => {
      const done = await call('GET', `/v1/guard/scans?project_id=${projectId}&status=completed`);
      return done.body.meta.total_count === 3 ? true : undefined;
    });
    expectError(await call('GET', '/v1/guard/scans?status=done'), 400, 'bad_request');
    expect((await call('GET', '/v1/guard/scans', { key: readOnlyKey })).status).toBe(200);
  });

  it('needs scans:write to trigger a scan (403), charging nothing', async () => {
    const projectId = await newProject('forbidden');
    const before = await balance();
    for (const key of [writeOnlyKey, readOnlyKey]) {
      expectError(
        await call('POST', '/v1/guard/scans', { key, body: { project_id: projectId } }),
        403,
        'forbidden',
      );
    }
    expect(await balance()).toBe(before);
  });

  it('answers 409 when the credits are short, charging nothing and storing nothing', async () => {
    const projectId = await newProject('poor');
    const spare = await balance();
    // Spend the balance down to nothing first.
    for (let i = 0; i < spare; i++) {
      expect((await call('POST', '/v1/guard/scans', { body: { project_id: projectId } })).status).toBe(202);
    }
    expect(await balance()).toBe(0);
    const before = (await call('GET', `/v1/guard/scans?project_id=${projectId}`)).body.meta.total_count;
    expectError(await call('POST', '/v1/guard/scans', { body: { project_id: projectId } }), 409, 'conflict');
    expect(await balance()).toBe(0);
    expect((await call('GET', `/v1/guard/scans?project_id=${projectId}`)).body.meta.total_count).toBe(before);
  });

  it("answers 404 for another team's project and scan, and 409 for an archived project", async () => {
    await identityClient.grantScanCredits({ teamId, credits: 2n });
    const projectId = await newProject('private');
    const { id } = (await call('POST', '/v1/guard/scans', { body: { project_id: projectId } })).body.data;
    expectError(
      await call('POST', '/v1/guard/scans', { key: otherScanKey, body: { project_id: projectId } }),
      404,
      'not_found',
    );
    expectError(await call('GET', `/v1/guard/scans/${id}`, { key: otherScanKey }), 404, 'not_found');
    expect(
      (await call('GET', `/v1/guard/scans?project_id=${projectId}`, { key: otherScanKey })).body.meta
        .total_count,
    ).toBe(0);
    expectError(await call('GET', '/v1/guard/scans/scn_unknown'), 404, 'not_found');

    const archived = await newProject('archived');
    expect(
      (await call('PATCH', `/v1/guard/projects/${archived}`, { body: { status: 'archived' } })).status,
    ).toBe(200);
    const before = await balance();
    expectError(await call('POST', '/v1/guard/scans', { body: { project_id: archived } }), 409, 'conflict');
    expect(await balance()).toBe(before);
  });

  it('refuses a body without project_id (422)', async () => {
    expectError(await call('POST', '/v1/guard/scans', { body: {} }), 422, 'validation_error');
  });
});

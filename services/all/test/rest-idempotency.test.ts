import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '@costgov/config';
import { identity } from '@costgov/contracts';
import { createLogger } from '@costgov/log';
import { createRpcClient } from '@costgov/rpc';
import { freshDb, testBus, uniqueName } from '@costgov/testing';
import { startSystem, systemConfig, type RunningSystem } from '../src/system';

/** Idempotency-Key through the whole system: the gateway's keys in front of the real budgets service. */
const logger = createLogger('test', 'silent');
const bootstrapKey = 'cg_live_idempotencybootstrapkey00000000000';
let system: RunningSystem;
let otherTeamKey: string;

interface Reply {
  status: number;
  headers: Headers;
  text: string;
  body: any; // eslint-disable-line @typescript-eslint/no-explicit-any
}

async function call(
  method: string,
  path: string,
  options: { key?: string; idempotencyKey?: string; body?: unknown; raw?: string } = {},
): Promise<Reply> {
  const headers: Record<string, string> = { authorization: `Bearer ${options.key ?? bootstrapKey}` };
  if (options.idempotencyKey !== undefined) headers['idempotency-key'] = options.idempotencyKey;
  const body = options.raw ?? (options.body === undefined ? undefined : JSON.stringify(options.body));
  if (body !== undefined) headers['content-type'] = 'application/json';
  const response = await fetch(`${system.url}${path}`, { method, headers, body });
  const text = await response.text();
  return {
    status: response.status,
    headers: response.headers,
    text,
    body: text ? JSON.parse(text) : undefined,
  };
}

const projectCount = async (key = bootstrapKey) =>
  (await call('GET', '/v1/guard/projects', { key })).body.meta.total_count as number;

beforeAll(async () => {
  // Keys in the configured Redis on real infrastructure, in the gateway's memory otherwise.
  const config = loadConfig(systemConfig, {
    PORT: '0',
    HOST: '127.0.0.1',
    DATA_DIR: 'memory',
    ...(process.env.REDIS_URL ? { REDIS_URL: process.env.REDIS_URL } : {}),
  });
  system = await startSystem(config, logger, {
    env: { GUARD_BOOTSTRAP_API_KEY: bootstrapKey },
    quietBootstrap: true,
    anyPorts: true,
    openDb: (service) => freshDb(service),
    bus: await testBus(logger),
  });
  const identityPort = system.services.find((s) => s.name === 'identity')!.port;
  const identityClient = createRpcClient(identity.IdentityService, `127.0.0.1:${identityPort}`);
  const other = await identityClient.createTeam({ name: 'other', plan: 'team' });
  otherTeamKey = (
    await identityClient.createApiKey(
      { name: 'ci', scopes: ['guard:read', 'guard:write'] },
      { teamId: other.id },
    )
  ).secret;
  identityClient.close();
});

afterAll(() => system?.stop());

describe('Idempotency-Key on POST /v1/guard/projects through the whole system', () => {
  it('creates the project once: a retry gets the same answer and the list does not grow', async () => {
    const idempotencyKey = uniqueName('create');
    const name = uniqueName('checkout');
    const before = await projectCount();
    const first = await call('POST', '/v1/guard/projects', {
      idempotencyKey,
      body: { name, connection_ids: [] },
    });
    expect(first.status).toBe(201);
    const retry = await call('POST', '/v1/guard/projects', {
      idempotencyKey,
      raw: JSON.stringify({ connection_ids: [], name }, null, 2),
    });
    expect(retry.status).toBe(201);
    expect(retry.headers.get('idempotent-replayed')).toBe('true');
    expect(retry.text).toBe(first.text);
    expect(retry.headers.get('location')).toBe(`/v1/guard/projects/${first.body.data.id}`);
    expect(await projectCount()).toBe(before + 1);
    expect((await call('GET', `/v1/guard/projects/${first.body.data.id}`)).status).toBe(200);
  });

  it('answers 422 idempotency_key_reused to the key with another body, and creates nothing', async () => {
    const idempotencyKey = uniqueName('reused');
    expect(
      (await call('POST', '/v1/guard/projects', { idempotencyKey, body: { name: uniqueName('a') } })).status,
    ).toBe(201);
    const before = await projectCount();
    const reused = await call('POST', '/v1/guard/projects', {
      idempotencyKey,
      body: { name: uniqueName('b') },
    });
    expect(reused.status).toBe(422);
    expect(reused.body.error.code).toBe('idempotency_key_reused');
    expect(await projectCount()).toBe(before);
  });

  it('replays a 409 the service decided (duplicate name), not running the request again', async () => {
    const name = uniqueName('taken');
    expect((await call('POST', '/v1/guard/projects', { body: { name } })).status).toBe(201);
    const idempotencyKey = uniqueName('duplicate');
    const conflict = await call('POST', '/v1/guard/projects', { idempotencyKey, body: { name } });
    expect(conflict.status).toBe(409);
    const retry = await call('POST', '/v1/guard/projects', { idempotencyKey, body: { name } });
    expect(retry.status).toBe(409);
    expect(retry.headers.get('idempotent-replayed')).toBe('true');
    expect(retry.text).toBe(conflict.text);
  });

  it("keeps teams apart: another team's request with the same key and body creates its own project", async () => {
    const idempotencyKey = uniqueName('team');
    const body = { name: uniqueName('shared-name') };
    const mine = await call('POST', '/v1/guard/projects', { idempotencyKey, body });
    const before = await projectCount(otherTeamKey);
    const theirs = await call('POST', '/v1/guard/projects', { key: otherTeamKey, idempotencyKey, body });
    expect(theirs.status).toBe(201);
    expect(theirs.headers.get('idempotent-replayed')).toBeNull();
    expect(theirs.body.data.id).not.toBe(mine.body.data.id);
    expect(await projectCount(otherTeamKey)).toBe(before + 1);
    // Each team's project stays its own: the other's id is not found.
    expect((await call('GET', `/v1/guard/projects/${mine.body.data.id}`, { key: otherTeamKey })).status).toBe(
      404,
    );
  });
});

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { uniqueName } from '@costgov/testing';
import type { RunningSystem } from '../src/system';
import { restCaller, startRestSystem } from './support/rest';

/** Idempotency-Key through the whole system: the gateway's keys in front of the real budgets service. */
const bootstrapKey = 'cg_live_idempotencybootstrapkey00000000000';
const call = restCaller(() => system.url, bootstrapKey);
let system: RunningSystem;
let otherTeamKey: string;

const projectCount = async (key = bootstrapKey) =>
  (await call('GET', '/v1/guard/projects', { key })).body.meta.total_count as number;

beforeAll(async () => {
  // Keys in the configured Redis on real infrastructure, in the gateway's memory otherwise.
  const config: Record<string, string> = process.env.REDIS_URL ? { REDIS_URL: process.env.REDIS_URL } : {};
  ({ system, otherTeamKey } = await startRestSystem(bootstrapKey, { config }));
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

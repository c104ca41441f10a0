import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { rules } from '@costgov/scanner';
import type { RunningSystem } from '../src/system';
import { expectError, restCaller, startRestSystem } from './support/rest';

const bootstrapKey = 'cg_live_restrulesbootstrapkey000000000000000';
const call = restCaller(() => system.url, bootstrapKey);
let system: RunningSystem;
let otherTeamKey: string;
let readOnlyKey: string;

beforeAll(async () => {
  ({ system, otherTeamKey, readOnlyKey } = await startRestSystem(bootstrapKey));
});

afterAll(() => system?.stop());

describe('GET /v1/guard/rules', () => {
  it('lists the scanner catalogue, each rule with what a person needs to act', async () => {
    const reply = await call('GET', '/v1/guard/rules');
    expect(reply.status, reply.text).toBe(200);
    expect(reply.body.data).toEqual(
      rules.map(({ neverFlags, ...rule }) => ({ ...rule, never_flags: neverFlags })),
    );
    expect(reply.body.data.length).toBeGreaterThanOrEqual(12);
    expect(reply.body.data.map((rule: { id: string }) => rule.id)).toContain('tags-missing-required');
    // Each says what it needs, how it computes savings and what it never flags (REST names = proto names).
    for (const rule of reply.body.data) {
      expect(Object.keys(rule)).toEqual(expect.arrayContaining(['needs', 'savings', 'never_flags']));
      expect(rule.needs && rule.savings && rule.never_flags, rule.id).toBeTruthy();
    }
  });

  it('is the same for every team and needs only guard:read', async () => {
    const ours = await call('GET', '/v1/guard/rules', { key: readOnlyKey });
    const theirs = await call('GET', '/v1/guard/rules', { key: otherTeamKey });
    expect(ours.status).toBe(200);
    expect(theirs.body).toEqual(ours.body);
  });

  it('needs a credential', async () => {
    expectError(await call('GET', '/v1/guard/rules', { key: null }), 401, 'unauthorized');
  });
});

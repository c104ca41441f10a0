import { randomUUID } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { exportJWK, generateKeyPair, SignJWT } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { create } from '@bufbuild/protobuf';
import { encodePayload, type CloudEvent } from '@costgov/bus';
import { events } from '@costgov/contracts';
import { newId } from '@costgov/ids';
import { eventually } from '@costgov/testing';
import type { RunningSystem } from '../src/system';
import { expectError, restCaller, startRestSystem, type Reply } from './support/rest';
import { focusFile } from '@costgov/testing';

const bootstrapKey = 'cg_live_restviolationsbootstrapkey0000000000';
const call = restCaller(() => system.url, bootstrapKey);
let system: RunningSystem;
let teamId: string;
let otherTeamKey: string;
let readOnlyKey: string;
let projectId: string;
const budgetId = newId('budget');
/** An OAuth token of an active SCIM user of the team, and that user's id. */
let oauthToken: string;
let oauthUserId: string;
let jwks: Server;
const issuer = 'https://idp.violations.test';

/** `budgets.budget.threshold_crossed` as budgets' relay publishes it, for the project under test. */
function thresholdCrossed(threshold: number, spend: number, budget = budgetId): CloudEvent {
  return {
    specversion: '1.0',
    id: newId('event'),
    source: 'budgets',
    type: 'budgets.budget.threshold_crossed',
    subject: budget,
    time: new Date().toISOString(),
    datacontenttype: 'application/json',
    data: encodePayload(
      events.BudgetThresholdCrossedSchema,
      create(events.BudgetThresholdCrossedSchema, {
        budgetId: budget,
        teamId,
        projectId,
        budgetName: 'Cloud spend',
        projectName: 'checkout',
        threshold,
        percentageUsed: spend / 10,
        currentSpend: spend,
        amount: 1000,
        currency: 'EUR',
        period: 'monthly',
        periodStart: '2026-11-01',
        periodEnd: '2026-12-01',
      }),
    ),
  };
}

const list = async (query = '') => call('GET', `/v1/guard/violations${query}`);
const idsOf = (reply: Reply) => (reply.body.data as Array<{ id: string }>).map((v) => v.id);
const violationCount = async () =>
  (await call('GET', `/v1/guard/projects/${projectId}`)).body.data.violation_count as number;

beforeAll(async () => {
  const pair = await generateKeyPair('ES256');
  const jwk = { ...(await exportJWK(pair.publicKey)), kid: 'k1', alg: 'ES256' };
  jwks = createServer((_req, res) => res.end(JSON.stringify({ keys: [jwk] })));
  await new Promise<void>((resolve) => jwks.listen(0, '127.0.0.1', resolve));
  ({ system, teamId, otherTeamKey, readOnlyKey } = await startRestSystem(bootstrapKey, {
    env: {
      OAUTH_ISSUER: issuer,
      OAUTH_AUDIENCE: 'costgov',
      OAUTH_JWKS_URL: `http://127.0.0.1:${(jwks.address() as AddressInfo).port}/jwks`,
    },
  }));
  oauthUserId = randomUUID();
  await system.services
    .find((s) => s.name === 'identity')!
    .db.query(
      `INSERT INTO scim_users (id, team_id, user_name, active, role) VALUES ($1, $2, $3, true, 'member')`,
      [oauthUserId, teamId, `${oauthUserId}@violations.test`],
    );
  oauthToken = await new SignJWT({ sub: oauthUserId, scope: 'guard:read guard:write' })
    .setProtectedHeader({ alg: 'ES256', kid: 'k1' })
    .setIssuer(issuer)
    .setAudience('costgov')
    .setExpirationTime('10m')
    .sign(pair.privateKey);

  const project = await call('POST', '/v1/guard/projects', { body: { name: 'checkout' } });
  expect(project.status).toBe(201);
  projectId = project.body.data.id;

  // The budget crosses 50, 80 and 100 %; the 80 % crossing is delivered twice.
  const eighty = thresholdCrossed(80, 850);
  for (const event of [thresholdCrossed(50, 512.5), eighty, thresholdCrossed(100, 1010)]) {
    await system.bus.publish(event);
  }
  await system.bus.publish({ ...eighty }, { dedupeId: `${eighty.id}-again` });
  await eventually(async () => ((await list()).body.data.length === 3 ? true : undefined));
});

afterAll(async () => {
  await system?.stop();
  await new Promise((resolve) => jwks?.close(resolve));
});

describe('REST /v1/guard/violations through the gateway', () => {
  it('lists the violations opened from the threshold events, once each, newest first', async () => {
    const reply = await list();
    expect(reply.status).toBe(200);
    expect(reply.body.data.map((v: { severity: string }) => v.severity)).toEqual([
      'critical',
      'warning',
      'info',
    ]);
    expect(reply.body.meta).toEqual({ current_page: 1, per_page: 25, total_pages: 1, total_count: 3 });
    expect(reply.body.data[1]).toEqual({
      id: expect.stringMatching(/^vio_/),
      project_id: projectId,
      budget_id: budgetId,
      type: 'budget_threshold_breach',
      severity: 'warning',
      status: 'open',
      message: expect.stringContaining(
        "Budget 'Cloud spend' of project 'checkout' crossed its 80 % threshold",
      ),
      current_value: 850,
      threshold_value: 800,
      threshold_percentage: 80,
      currency: 'EUR',
      period_start: '2026-11-01',
      created_at: expect.stringMatching(/Z$/),
      updated_at: expect.stringMatching(/Z$/),
      acknowledged_at: null,
      acknowledged_by: null,
      acknowledgement_note: null,
      resolved_at: null,
      resolved_by: null,
      resolution_note: null,
    });
    await eventually(async () => ((await violationCount()) === 3 ? true : undefined));
  });

  it.each([
    ['?severity=warning', ['warning']],
    ['?severity=critical', ['critical']],
    ['?status=open', ['critical', 'warning', 'info']],
    ['?sort=severity', ['info', 'warning', 'critical']],
    ['?sort=-severity', ['critical', 'warning', 'info']],
    ['?sort=created_at', ['info', 'warning', 'critical']],
    ['?sort=-current_value', ['critical', 'warning', 'info']],
    [`?budget_id=${budgetId}&sort=threshold_value`, ['info', 'warning', 'critical']],
    ['?per_page=2&page=2&sort=created_at', ['critical']],
    ['?page=3&per_page=2', []],
    [`?budget_id=${newId('budget')}`, []],
  ])('GET %s', async (query, severities) => {
    const reply = await list(query);
    expect(reply.status).toBe(200);
    expect(reply.body.data.map((v: { severity: string }) => v.severity)).toEqual(severities);
  });

  it('answers the page arithmetic in meta', async () => {
    const reply = await list('?per_page=2&page=2');
    expect(reply.body.meta).toEqual({ current_page: 2, per_page: 2, total_pages: 2, total_count: 3 });
  });

  it.each([
    ['?per_page=0', 'per_page'],
    ['?per_page=101', 'per_page'],
    ['?per_page=ten', 'per_page'],
    ['?page=0', 'page'],
    ['?page=x', 'page'],
    ['?sort=message', 'sort'],
    ['?sort=', 'sort'],
    ['?severity=high', 'severity'],
    ['?status=closed', 'status'],
    ['?colour=red', 'colour'],
  ])('answers 400 to %s naming the parameter', async (query, field) => {
    const reply = await list(query);
    expectError(reply, 400, 'bad_request');
    expect(reply.body.error.details.map((d: { field: string }) => d.field)).toContain(field);
  });

  it("shows another team nothing, and answers 404 to another team's id", async () => {
    const theirs = await call('GET', '/v1/guard/violations', { key: otherTeamKey });
    expect(theirs.body.data).toEqual([]);
    const id = idsOf(await list())[0]!;
    expectError(await call('GET', `/v1/guard/violations/${id}`, { key: otherTeamKey }), 404, 'not_found');
    expectError(
      await call('POST', `/v1/guard/violations/${id}/acknowledge`, {
        key: otherTeamKey,
        body: { note: 'x' },
      }),
      404,
      'not_found',
    );
    expectError(
      await call('POST', `/v1/guard/violations/${id}/resolve`, { key: otherTeamKey }),
      404,
      'not_found',
    );
    expectError(await call('GET', `/v1/guard/violations/${newId('violation')}`), 404, 'not_found');
    expect((await call('GET', `/v1/guard/violations/${id}`)).body.data.status).toBe('open');
  });

  it('refuses a write with a read-only key (403) and lets it read', async () => {
    const id = idsOf(await list())[0]!;
    expectError(
      await call('POST', `/v1/guard/violations/${id}/acknowledge`, { key: readOnlyKey, body: {} }),
      403,
      'forbidden',
    );
    expect((await call('GET', `/v1/guard/violations/${id}`, { key: readOnlyKey })).status).toBe(200);
  });

  it.each([
    ['an empty note', { note: '' }],
    ['a blank note', { note: '   ' }],
    ['a note that is not a string', { note: 42 }],
    ['a note of 2001 characters', { note: 'x'.repeat(2001) }],
    ['an unknown field', { note: 'ok', reason: 'x' }],
  ])('answers 422 to %s and changes nothing', async (_case, body) => {
    const id = idsOf(await list('?severity=info'))[0]!;
    for (const action of ['acknowledge', 'resolve']) {
      const reply = await call('POST', `/v1/guard/violations/${id}/${action}`, { body });
      expectError(reply, 422, 'validation_error');
    }
    expect((await call('GET', `/v1/guard/violations/${id}`)).body.data.status).toBe('open');
  });

  it('acknowledges with a note, then resolves; illegal transitions are 409; violation_count follows', async () => {
    const [critical, warning] = idsOf(await list());
    const acknowledged = await call('POST', `/v1/guard/violations/${warning}/acknowledge`, {
      body: { note: 'Load test until Friday.' },
    });
    expect(acknowledged.status).toBe(200);
    expect(acknowledged.body.data).toMatchObject({
      id: warning,
      status: 'acknowledged',
      acknowledgement_note: 'Load test until Friday.',
      acknowledged_by: expect.stringMatching(/^key_/),
      acknowledged_at: expect.stringMatching(/Z$/),
      resolved_at: null,
    });
    expect((await call('GET', `/v1/guard/violations/${warning}`)).body.data).toEqual(acknowledged.body.data);
    expectError(
      await call('POST', `/v1/guard/violations/${warning}/acknowledge`, { body: { note: 'again' } }),
      409,
      'conflict',
    );
    // Acknowledged violations still count.
    expect(await violationCount()).toBe(3);

    // Resolve takes no body at all.
    const resolved = await call('POST', `/v1/guard/violations/${warning}/resolve`);
    expect(resolved.status).toBe(200);
    expect(resolved.body.data).toMatchObject({
      status: 'resolved',
      acknowledgement_note: 'Load test until Friday.',
      resolution_note: null,
      resolved_by: acknowledged.body.data.acknowledged_by,
    });
    expectError(await call('POST', `/v1/guard/violations/${warning}/resolve`), 409, 'conflict');
    expectError(
      await call('POST', `/v1/guard/violations/${warning}/acknowledge`, { body: {} }),
      409,
      'conflict',
    );

    // open → resolved directly, with a note.
    const direct = await call('POST', `/v1/guard/violations/${critical}/resolve`, {
      body: { note: 'Raised the budget.' },
    });
    expect(direct.body.data).toMatchObject({ status: 'resolved', resolution_note: 'Raised the budget.' });
    await eventually(async () => ((await violationCount()) === 1 ? true : undefined));
    expect(idsOf(await list('?status=resolved&sort=created_at'))).toEqual([warning, critical]);
  });

  it('replays an acknowledge retried with the same Idempotency-Key instead of answering 409', async () => {
    const id = idsOf(await list('?severity=info'))[0]!;
    const headers = { 'idempotency-key': `ack-${id}` };
    const first = await call('POST', `/v1/guard/violations/${id}/acknowledge`, {
      body: { note: 'seen' },
      headers,
    });
    expect(first.status).toBe(200);
    const retry = await call('POST', `/v1/guard/violations/${id}/acknowledge`, {
      body: { note: 'seen' },
      headers,
    });
    expect(retry.status).toBe(200);
    expect(retry.headers.get('idempotent-replayed')).toBe('true');
    expect(retry.body).toEqual(first.body);
  });

  it('records the SCIM user behind an OAuth token as the actor', async () => {
    // The info violation, acknowledged with an API key above.
    const id = idsOf(await list('?severity=info&status=acknowledged'))[0]!;
    const reply = await call('POST', `/v1/guard/violations/${id}/resolve`, {
      key: oauthToken,
      body: { note: 'Handled by the on-call engineer.' },
    });
    expect(reply.status).toBe(200);
    expect(reply.body.data).toMatchObject({ status: 'resolved', resolved_by: oauthUserId });
  });
});

describe('from a FOCUS upload to a resolved violation, through REST only', () => {
  it('opens one violation per crossed threshold, acknowledges, resolves, and purges them with the budget', async () => {
    const connection = await call('POST', '/v1/guard/connections', {
      body: { name: 'aws-prod', provider: 'aws' },
    });
    expect(connection.status, JSON.stringify(connection.body)).toBe(201);
    const project = await call('POST', '/v1/guard/projects', {
      body: { name: 'storefront', connection_ids: [connection.body.data.id] },
    });
    const storefront = project.body.data.id as string;
    const budget = await call('POST', '/v1/guard/budgets', {
      body: {
        project_id: storefront,
        name: 'Storefront cloud',
        amount: 100,
        currency: 'USD',
        period: 'monthly',
        thresholds: [50, 80, 100],
      },
    });
    expect(budget.status, JSON.stringify(budget.body)).toBe(201);
    const budgetId = budget.body.data.id as string;

    const upload = await fetch(`${system.url}/v1/guard/connections/${connection.body.data.id}/cost-data`, {
      method: 'POST',
      headers: { authorization: `Bearer ${bootstrapKey}`, 'content-type': 'text/csv' },
      body: focusFile([30.25, 12.5, 40, 25.75]),
    });
    expect(upload.status, await upload.clone().text()).toBe(200);

    const opened = await eventually(async () => {
      const reply = await list(`?budget_id=${budgetId}&sort=threshold_value`);
      return reply.body.data.length === 3 ? reply.body.data : undefined;
    });
    expect(
      opened.map((v: { severity: string; threshold_percentage: number; threshold_value: number }) => [
        v.threshold_percentage,
        v.severity,
        v.threshold_value,
      ]),
    ).toEqual([
      [50, 'info', 50],
      [80, 'warning', 80],
      [100, 'critical', 100],
    ]);
    for (const violation of opened) {
      expect(violation).toMatchObject({ project_id: storefront, status: 'open', currency: 'USD' });
      expect(violation.current_value).toBeCloseTo(108.5, 6);
      expect(violation.message).toContain("Budget 'Storefront cloud' of project 'storefront'");
    }
    const countOf = async () =>
      (await call('GET', `/v1/guard/projects/${storefront}`)).body.data.violation_count as number;
    await eventually(async () => ((await countOf()) === 3 ? true : undefined));

    const [info, warning, critical] = opened.map((v: { id: string }) => v.id);
    expect(
      (await call('POST', `/v1/guard/violations/${warning}/acknowledge`, { body: { note: 'On it.' } }))
        .status,
    ).toBe(200);
    expect((await call('POST', `/v1/guard/violations/${critical}/resolve`)).status).toBe(200);
    await eventually(async () => ((await countOf()) === 2 ? true : undefined));

    // Deleting the budget purges its violations; the project no longer counts them.
    const deleted = await fetch(`${system.url}/v1/guard/budgets/${budgetId}`, {
      method: 'DELETE',
      headers: { authorization: `Bearer ${bootstrapKey}` },
    });
    expect(deleted.status).toBe(204);
    await eventually(async () =>
      (await list(`?budget_id=${budgetId}`)).body.data.length === 0 ? true : undefined,
    );
    expectError(await call('GET', `/v1/guard/violations/${info}`), 404, 'not_found');
    await eventually(async () => ((await countOf()) === 0 ? true : undefined));
  });
});

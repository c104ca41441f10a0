import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { create } from '@bufbuild/protobuf';
import { encodePayload } from '@costgov/bus';
import { events, identity } from '@costgov/contracts';
import { newId } from '@costgov/ids';
import { createRpcClient } from '@costgov/rpc';
import { eventually, uniqueName } from '@costgov/testing';
import type { RunningSystem } from '../src/system';
import { expectError, restCaller, startRestSystem } from './support/rest';
import { startWebhookReceiver, type WebhookReceiver } from './support/webhook-receiver';

/**
 * Idempotency-Key kept by the service that owns the effect, not only by the gateway: the gateway keeps an
 * answer for 1 ms here (IDEMPOTENCY_TTL_MS), as if it had been lost with a gateway or with Redis, while the
 * services keep theirs for a day. Every POST that documents the header answers a late retry with the
 * original answer, marked replayed, and makes its effect once.
 */
const bootstrapKey = 'cg_live_idempotencyrecordedbootstrap000000';
const call = restCaller(() => system.url, bootstrapKey);
const gatewayForgetsMs = 1;
let system: RunningSystem;
let teamId: string;
let receiver: WebhookReceiver;
let projectId: string;

const dbOf = (service: string) => system.services.find((s) => s.name === service)!.db;
const count = async (service: string, sql: string, params: unknown[]) =>
  (await dbOf(service).query<{ n: number }>(sql, params)).rows[0]!.n;
const outboxCount = (service: string, type: string, subject: string) =>
  count(service, 'SELECT count(*)::int AS n FROM outbox WHERE type = $1 AND subject = $2', [type, subject]);
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** A violation of the project, opened as budgets' threshold event opens one. */
async function openViolation(): Promise<string> {
  const budgetId = newId('budget');
  await system.bus.publish({
    specversion: '1.0',
    id: newId('event'),
    source: 'budgets',
    type: 'budgets.budget.threshold_crossed',
    subject: budgetId,
    time: new Date().toISOString(),
    datacontenttype: 'application/json',
    data: encodePayload(
      events.BudgetThresholdCrossedSchema,
      create(events.BudgetThresholdCrossedSchema, {
        budgetId,
        teamId,
        projectId,
        budgetName: 'Cloud spend',
        projectName: 'checkout',
        threshold: 100,
        percentageUsed: 101,
        currentSpend: 1010,
        amount: 1000,
        currency: 'EUR',
        period: 'monthly',
        periodStart: '2026-11-01',
        periodEnd: '2026-12-01',
      }),
    ),
  });
  return eventually(async () => {
    const reply = await call('GET', `/v1/guard/violations?project_id=${projectId}&status=open`);
    const found = (reply.body.data as Array<{ id: string; budget_id: string }>).find(
      (v) => v.budget_id === budgetId,
    );
    return found?.id;
  });
}

/** A delivery that failed, to a webhook whose receiver answers 500. */
async function failedDelivery(): Promise<{ webhookId: string; deliveryId: string }> {
  const hook = await call('POST', '/v1/guard/webhooks', {
    body: { url: receiver.url(`/${uniqueName('fails')}`), events: ['budgets.project.created'] },
  });
  expect(hook.status, hook.text).toBe(201);
  expect((await call('POST', '/v1/guard/projects', { body: { name: uniqueName('delivered') } })).status).toBe(
    201,
  );
  const deliveryId = await eventually(async () => {
    const reply = await call('GET', `/v1/guard/webhooks/${hook.body.data.id}/deliveries`);
    const delivery = (reply.body.data as Array<{ id: string; attempt_count: number }>)[0];
    return delivery && delivery.attempt_count > 0 ? delivery.id : undefined;
  }, 20_000);
  return { webhookId: hook.body.data.id, deliveryId };
}

interface Operation {
  name: string;
  /** Prepares what the POST needs; returns its path, body and a count of its effect. */
  setUp(): Promise<{
    path: string;
    body?: unknown;
    /** A valid request of its own with the same key (none where the operation takes no body). */
    otherBody?: unknown;
    status: number;
    effects: () => Promise<number>;
  }>;
}

const operations: Operation[] = [
  {
    name: 'POST /v1/guard/projects',
    async setUp() {
      const name = uniqueName('project');
      return {
        path: '/v1/guard/projects',
        body: { name },
        otherBody: { name: `${name}-other` },
        status: 201,
        effects: () => count('budgets', 'SELECT count(*)::int AS n FROM projects WHERE name = $1', [name]),
      };
    },
  },
  {
    name: 'POST /v1/guard/budgets',
    async setUp() {
      const name = uniqueName('budget');
      return {
        path: '/v1/guard/budgets',
        body: { project_id: projectId, name, amount: 500, currency: 'USD' },
        otherBody: { project_id: projectId, name, amount: 600, currency: 'USD' },
        status: 201,
        effects: () => count('budgets', 'SELECT count(*)::int AS n FROM budgets WHERE name = $1', [name]),
      };
    },
  },
  {
    name: 'POST /v1/guard/connections',
    async setUp() {
      const name = uniqueName('connection');
      return {
        path: '/v1/guard/connections',
        body: { name, provider: 'aws' },
        otherBody: { name, provider: 'gcp' },
        status: 201,
        effects: () => count('costs', 'SELECT count(*)::int AS n FROM connections WHERE name = $1', [name]),
      };
    },
  },
  {
    name: 'POST /v1/guard/webhooks',
    async setUp() {
      const url = `https://hooks.example.com/${uniqueName('hook')}`;
      return {
        path: '/v1/guard/webhooks',
        body: { url, events: ['violations.*'] },
        otherBody: { url, events: ['budgets.*'] },
        status: 201,
        effects: () => count('notifier', 'SELECT count(*)::int AS n FROM webhooks WHERE url = $1', [url]),
      };
    },
  },
  {
    name: 'POST /v1/guard/scans',
    async setUp() {
      const project = await call('POST', '/v1/guard/projects', { body: { name: uniqueName('scanned') } });
      const scanned = project.body.data.id as string;
      return {
        path: '/v1/guard/scans',
        body: { project_id: scanned },
        otherBody: { project_id: projectId },
        status: 202,
        // A scan and its one credit: the ledger's debits of the project's scans.
        effects: async () => {
          const scans = await count('scanner', 'SELECT count(*)::int AS n FROM scans WHERE project_id = $1', [
            scanned,
          ]);
          const ids = (
            await dbOf('scanner').query<{ id: string }>('SELECT id FROM scans WHERE project_id = $1', [
              scanned,
            ])
          ).rows.map((r) => r.id);
          const debits = await count(
            'identity',
            'SELECT count(*)::int AS n FROM scan_credit_debits WHERE scan_id = ANY($1)',
            [ids],
          );
          expect(debits).toBe(scans);
          return scans;
        },
      };
    },
  },
  {
    name: 'POST /v1/guard/violations/{id}/acknowledge',
    async setUp() {
      const id = await openViolation();
      return {
        path: `/v1/guard/violations/${id}/acknowledge`,
        body: { note: 'expected' },
        otherBody: { note: 'another note' },
        status: 200,
        effects: () => outboxCount('violations', 'violations.violation.acknowledged', id),
      };
    },
  },
  {
    name: 'POST /v1/guard/violations/{id}/resolve',
    async setUp() {
      const id = await openViolation();
      return {
        path: `/v1/guard/violations/${id}/resolve`,
        otherBody: { note: 'fixed' },
        status: 200,
        effects: () => outboxCount('violations', 'violations.violation.resolved', id),
      };
    },
  },
  {
    name: 'POST /v1/guard/webhooks/{id}/deliveries/{delivery_id}/retry',
    async setUp() {
      const { webhookId, deliveryId } = await failedDelivery();
      return {
        path: `/v1/guard/webhooks/${webhookId}/deliveries/${deliveryId}/retry`,
        status: 202,
        effects: () =>
          count('notifier', 'SELECT manual_requests::int AS n FROM deliveries WHERE id = $1', [deliveryId]),
      };
    },
  },
];

beforeAll(async () => {
  receiver = await startWebhookReceiver(() => ({ status: 500 }));
  const config: Record<string, string> = { IDEMPOTENCY_TTL_MS: String(gatewayForgetsMs) };
  if (process.env.REDIS_URL) config.REDIS_URL = process.env.REDIS_URL;
  ({ system, teamId } = await startRestSystem(bootstrapKey, {
    config,
    env: { WEBHOOK_ALLOWED_HOSTS: '127.0.0.1' },
  }));
  const identityClient = createRpcClient(
    identity.IdentityService,
    `127.0.0.1:${system.services.find((s) => s.name === 'identity')!.port}`,
  );
  await identityClient.grantScanCredits({ teamId, credits: 100n });
  await identityClient.setTeamLimits({ teamId, apiRequestsPerMinute: 100_000, apiConcurrentRequests: 100 });
  identityClient.close();
  projectId = (await call('POST', '/v1/guard/projects', { body: { name: 'checkout' } })).body.data.id;
});

afterAll(async () => {
  await system?.stop();
  await receiver?.close();
});

describe('Idempotency-Key answered by the owning service once the gateway has forgotten it', () => {
  it.each(operations)(
    '$name: the late retry gets the original answer, and the effect is made once',
    async (op) => {
      const { path, body, otherBody, status, effects } = await op.setUp();
      const idempotencyKey = uniqueName('late');
      const first = await call('POST', path, { idempotencyKey, body });
      expect(first.status, first.text).toBe(status);
      expect(first.headers.get('idempotent-replayed')).toBeNull();
      await sleep(gatewayForgetsMs + 50);
      const late = await call('POST', path, { idempotencyKey, body });
      expect(late.status, late.text).toBe(status);
      expect(late.headers.get('idempotent-replayed')).toBe('true');
      expect(late.text).toBe(first.text);
      expect(late.headers.get('location')).toBe(first.headers.get('location'));
      expect(await effects()).toBe(1);
      if (otherBody === undefined) return;
      // The key with another request, once the gateway has forgotten it: the service refuses it.
      await sleep(gatewayForgetsMs + 50);
      const reused = await call('POST', path, { idempotencyKey, body: otherBody });
      expectError(reused, 422, 'idempotency_key_reused');
      expect(await effects()).toBe(1);
      // That refusal is not kept for the key: the original request still gets its answer.
      const original = await call('POST', path, { idempotencyKey, body });
      expect(original.status, original.text).toBe(status);
      expect(original.text).toBe(first.text);
      expect(original.headers.get('idempotent-replayed')).toBe('true');
    },
    30_000,
  );
});

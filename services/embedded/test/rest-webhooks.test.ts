import { Webhook as StandardWebhook } from 'standardwebhooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { identity } from '@costgov/contracts';
import { createRpcClient } from '@costgov/rpc';
import { eventually } from '@costgov/testing';
import type { RunningSystem } from '../src/system';
import { expectError, restCaller, startRestSystem, type Reply } from './support/rest';
import {
  startWebhookReceiver,
  type ReceivedDelivery,
  type WebhookReceiver,
} from './support/webhook-receiver';
import { focusFile } from '@costgov/testing';

const bootstrapKey = 'cg_live_restwebhooksbootstrapkey00000000000';
const call = restCaller(() => system.url, bootstrapKey);
let system: RunningSystem;
let otherTeamKey: string;
let readOnlyKey: string;
let receiver: WebhookReceiver;

/** The notifier's attempt timeout here (10 s by default). */
const attemptTimeoutMs = 1_000;

/**
 * `/flaky` answers 500 to its first request, `/slow` answers its first after the attempt timeout;
 * after that, and on every other path, 200 at once.
 */
const answers = (delivery: ReceivedDelivery, earlier: number) => {
  if (delivery.path === '/flaky' && earlier === 0)
    return { status: 500, body: 'receiver down for maintenance' };
  if (delivery.path === '/slow' && earlier === 0) return { status: 200, delayMs: attemptTimeoutMs * 3 };
  return { status: 200, body: 'ok' };
};

const create = (body: Record<string, unknown>, key?: string) =>
  call('POST', '/v1/guard/webhooks', { body, key });

/** Creates a webhook to the receiver's `path` for `events` and returns it with its secret. */
async function webhookTo(path: string, events: string[]): Promise<{ id: string; secret: string }> {
  const reply = await create({ url: receiver.url(path), events, description: path });
  expect(reply.status, reply.text).toBe(201);
  return reply.body.data;
}

const deliveriesOf = async (id: string, query = ''): Promise<Reply> =>
  call('GET', `/v1/guard/webhooks/${id}/deliveries${query}`);

/** The receiver's requests at `path` once there are at least `count`. */
const receivedAt = (path: string, count = 1) =>
  eventually(() => (receiver.at(path).length >= count ? receiver.at(path) : undefined), 30_000);

/** Verifies a delivery with the standardwebhooks package, as an integrator would; returns the event. */
const verified = (secret: string, delivery: ReceivedDelivery) =>
  new StandardWebhook(secret).verify(delivery.body, delivery.headers as Record<string, string>) as {
    id: string;
    type: string;
    subject: string;
    data: Record<string, unknown>;
  };

beforeAll(async () => {
  receiver = await startWebhookReceiver(answers);
  // The SSRF guard stays on; only the local receiver's address is exempt, as an operator would do it.
  let teamId: string;
  ({ system, teamId, otherTeamKey, readOnlyKey } = await startRestSystem(bootstrapKey, {
    env: { WEBHOOK_ALLOWED_HOSTS: '127.0.0.1', WEBHOOK_TIMEOUT_MS: String(attemptTimeoutMs) },
  }));
  // The tests poll the deliveries log while the notifier works: above the default 120 requests a minute.
  const identityPort = system.services.find((s) => s.name === 'identity')!.port;
  const identityClient = createRpcClient(identity.IdentityService, `127.0.0.1:${identityPort}`);
  await identityClient.setTeamLimits({
    teamId,
    apiRequestsPerMinute: 100_000,
    apiConcurrentRequests: 100,
  });
  identityClient.close();
});

afterAll(async () => {
  await system?.stop();
  await receiver?.close();
});

describe('REST /v1/guard/webhooks: endpoints', () => {
  it('creates an endpoint (201, Location) and shows its secret once', async () => {
    const reply = await create({
      url: 'https://hooks.example.com/costgov',
      events: ['budgets.budget.breached', 'violations.*'],
      description: 'on-call',
    });
    expect(reply.status, reply.text).toBe(201);
    const created = reply.body.data;
    expect(created).toEqual({
      id: expect.stringMatching(/^whk_/),
      url: 'https://hooks.example.com/costgov',
      events: ['budgets.budget.breached', 'violations.*'],
      description: 'on-call',
      enabled: true,
      disabled_reason: null,
      disabled_at: null,
      previous_secret_expires_at: null,
      created_at: expect.any(String),
      updated_at: expect.any(String),
      secret: expect.stringMatching(/^whsec_[A-Za-z0-9+/=]{44}$/),
    });
    expect(reply.headers.get('location')).toBe(`/v1/guard/webhooks/${created.id}`);

    const read = await call('GET', `/v1/guard/webhooks/${created.id}`);
    expect(read.status).toBe(200);
    const { secret: _secret, ...withoutSecret } = created;
    expect(read.body.data).toEqual(withoutSecret);
    const listed = await call('GET', '/v1/guard/webhooks');
    expect(listed.text).not.toContain('whsec_');
  });

  it('lists newest first with paging meta and the enabled filter', async () => {
    const a = (await create({ url: 'https://a.example.com/h', events: ['*'] })).body.data;
    const b = (await create({ url: 'https://b.example.com/h', events: ['*'] })).body.data;
    await call('PATCH', `/v1/guard/webhooks/${a.id}`, { body: { enabled: false } });

    const page = await call('GET', '/v1/guard/webhooks?per_page=1');
    expect(page.status).toBe(200);
    expect(page.body.data.map((w: { id: string }) => w.id)).toEqual([b.id]);
    expect(page.body.meta).toMatchObject({ current_page: 1, per_page: 1 });
    expect(page.body.meta.total_count).toBeGreaterThanOrEqual(2);

    const disabled = await call('GET', '/v1/guard/webhooks?enabled=false');
    expect(disabled.body.data.map((w: { id: string }) => w.id)).toContain(a.id);
    expect(disabled.body.data.every((w: { enabled: boolean }) => !w.enabled)).toBe(true);
    const enabled = await call('GET', '/v1/guard/webhooks?enabled=true');
    expect(enabled.body.data.map((w: { id: string }) => w.id)).toContain(b.id);
    expect(enabled.body.data.map((w: { id: string }) => w.id)).not.toContain(a.id);
    expectError(await call('GET', '/v1/guard/webhooks?enabled=maybe'), 400, 'bad_request');
  });

  it('changes only the fields sent, disables and enables with a reason', async () => {
    const { id } = (await create({ url: 'https://c.example.com/h', events: ['budgets.*'] })).body.data;
    const changed = await call('PATCH', `/v1/guard/webhooks/${id}`, {
      body: { events: ['violations.violation.created'], description: 'violations only' },
    });
    expect(changed.status, changed.text).toBe(200);
    expect(changed.body.data).toMatchObject({
      url: 'https://c.example.com/h',
      events: ['violations.violation.created'],
      description: 'violations only',
      enabled: true,
    });
    expect(changed.body.data).not.toHaveProperty('secret');

    const off = await call('PATCH', `/v1/guard/webhooks/${id}`, { body: { enabled: false } });
    expect(off.body.data).toMatchObject({
      enabled: false,
      disabled_reason: 'manual',
      disabled_at: expect.any(String),
    });
    const on = await call('PATCH', `/v1/guard/webhooks/${id}`, { body: { enabled: true } });
    expect(on.body.data).toMatchObject({ enabled: true, disabled_reason: null, disabled_at: null });
    const same = await call('PATCH', `/v1/guard/webhooks/${id}`, { body: {} });
    expect(same.status).toBe(200);
    expect(same.body.data).toEqual(on.body.data);
  });

  it('rotates the secret: the new one is shown once, the old one signs until the overlap ends', async () => {
    const { id, secret } = (await create({ url: 'https://d.example.com/h', events: ['*'] })).body.data;
    const rotated = await call('PATCH', `/v1/guard/webhooks/${id}`, {
      body: { rotate_secret: true, previous_secret_ttl_seconds: 3600 },
    });
    expect(rotated.status, rotated.text).toBe(200);
    expect(rotated.body.data.secret).toMatch(/^whsec_/);
    expect(rotated.body.data.secret).not.toBe(secret);
    const until = Date.parse(rotated.body.data.previous_secret_expires_at);
    expect(until - Date.now()).toBeGreaterThan(3500_000);
    expect(until - Date.now()).toBeLessThanOrEqual(3600_000);
    const read = await call('GET', `/v1/guard/webhooks/${id}`);
    expect(read.body.data).not.toHaveProperty('secret');

    const ended = await call('PATCH', `/v1/guard/webhooks/${id}`, {
      body: { previous_secret_ttl_seconds: 0 },
    });
    expect(ended.body.data.previous_secret_expires_at).toBeNull();
    expect(ended.body.data).not.toHaveProperty('secret');
  });

  it('deletes (204); the endpoint is then 404', async () => {
    const { id } = (await create({ url: 'https://e.example.com/h', events: ['*'] })).body.data;
    const deleted = await call('DELETE', `/v1/guard/webhooks/${id}`);
    expect(deleted.status).toBe(204);
    expect(deleted.text).toBe('');
    expectError(await call('GET', `/v1/guard/webhooks/${id}`), 404, 'not_found');
    expectError(await call('DELETE', `/v1/guard/webhooks/${id}`), 404, 'not_found');
  });

  it('replays a create with the same Idempotency-Key instead of making a second endpoint', async () => {
    const body = { url: 'https://f.example.com/h', events: ['scanner.*'] };
    const first = await call('POST', '/v1/guard/webhooks', { body, idempotencyKey: 'whk-create-1' });
    const again = await call('POST', '/v1/guard/webhooks', { body, idempotencyKey: 'whk-create-1' });
    expect(first.status).toBe(201);
    expect(again.status).toBe(201);
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    expect(again.body.data.id).toBe(first.body.data.id);
    const other = await call('POST', '/v1/guard/webhooks', {
      body: { ...body, description: 'other' },
      idempotencyKey: 'whk-create-1',
    });
    expectError(other, 422, 'idempotency_key_reused');
  });
});

describe('REST /v1/guard/webhooks: bad input changes nothing', () => {
  const fieldsOf = (reply: Reply) => reply.body.error.details.map((d: { field: string }) => d.field);

  it.each([
    ['no url and no events', {}, ['url', 'events']],
    ['an empty events list', { url: 'https://x.example.com', events: [] }, ['events']],
    ['an unknown field', { url: 'https://x.example.com', events: ['*'], secret: 'whsec_x' }, ['secret']],
    [
      'a description too long',
      { url: 'https://x.example.com', events: ['*'], description: 'x'.repeat(501) },
      ['description'],
    ],
    ['a URL of another scheme', { url: 'ftp://x.example.com/h', events: ['*'] }, ['url']],
    ['a URL with credentials', { url: 'https://user:pw@x.example.com/h', events: ['*'] }, ['url']],
    [
      'an unknown event type',
      { url: 'https://x.example.com', events: ['budgets.budget.exploded'] },
      ['events[0]'],
    ],
    [
      'an internal event type',
      { url: 'https://x.example.com', events: ['scanner.scan.requested'] },
      ['events[0]'],
    ],
    [
      'a wildcard matching nothing',
      { url: 'https://x.example.com', events: ['*', 'billing.*'] },
      ['events[1]'],
    ],
  ])('refuses %s with 422 and a detail per field', async (_case, body, fields) => {
    const before = (await call('GET', '/v1/guard/webhooks')).body.meta.total_count;
    const reply = await create(body);
    expectError(reply, 422, 'validation_error');
    expect(fieldsOf(reply)).toEqual(expect.arrayContaining(fields));
    expect((await call('GET', '/v1/guard/webhooks')).body.meta.total_count).toBe(before);
  });

  it('refuses bad updates with 422 and leaves the endpoint as it was', async () => {
    const { id } = (await create({ url: 'https://g.example.com/h', events: ['*'] })).body.data;
    const before = (await call('GET', `/v1/guard/webhooks/${id}`)).body.data;
    for (const body of [
      { events: [] },
      { url: 'not a url' },
      { enabled: 'yes' },
      { previous_secret_ttl_seconds: -1 },
      { rotate_secret: true, previous_secret_ttl_seconds: 31 * 24 * 3600 },
    ]) {
      expectError(await call('PATCH', `/v1/guard/webhooks/${id}`, { body }), 422, 'validation_error');
    }
    expect((await call('GET', `/v1/guard/webhooks/${id}`)).body.data).toEqual(before);
  });

  it('refuses a bad deliveries filter with 400', async () => {
    const { id } = (await create({ url: 'https://h.example.com/h', events: ['*'] })).body.data;
    expectError(await deliveriesOf(id, '?status=lost'), 400, 'bad_request');
    expectError(await deliveriesOf(id, '?per_page=101'), 400, 'bad_request');
  });
});

describe('REST /v1/guard/webhooks: SSRF', () => {
  it.each([
    ['cloud metadata (link-local)', 'http://169.254.169.254/latest/meta-data/'],
    ['a private network', 'http://10.0.0.1/hook'],
    ['a private network over https', 'https://192.168.1.20:8443/hook'],
    ['loopback by name', 'http://localhost:8080/hook'],
    ['IPv6 loopback', 'http://[::1]/hook'],
    ['an IPv4-mapped private address', 'http://[::ffff:10.0.0.1]/hook'],
  ])('refuses %s with 422 on url', async (_case, url) => {
    const reply = await create({ url, events: ['*'] });
    expectError(reply, 422, 'validation_error');
    expect(reply.body.error.details).toEqual([{ field: 'url', message: expect.stringMatching(/refused/) }]);
  });

  it('refuses moving an endpoint to a private address', async () => {
    const { id } = (await create({ url: 'https://i.example.com/h', events: ['*'] })).body.data;
    const reply = await call('PATCH', `/v1/guard/webhooks/${id}`, { body: { url: 'http://10.1.2.3/' } });
    expectError(reply, 422, 'validation_error');
    expect((await call('GET', `/v1/guard/webhooks/${id}`)).body.data.url).toBe('https://i.example.com/h');
  });
});

describe('REST /v1/guard/webhooks: access', () => {
  let id: string;
  beforeAll(async () => {
    id = (await create({ url: 'https://j.example.com/h', events: ['*'] })).body.data.id;
  });

  it("answers 404 for another team's endpoint, its deliveries and their retry", async () => {
    const as = { key: otherTeamKey };
    expectError(await call('GET', `/v1/guard/webhooks/${id}`, as), 404, 'not_found');
    expectError(
      await call('PATCH', `/v1/guard/webhooks/${id}`, { ...as, body: { enabled: false } }),
      404,
      'not_found',
    );
    expectError(await call('DELETE', `/v1/guard/webhooks/${id}`, as), 404, 'not_found');
    expectError(await call('GET', `/v1/guard/webhooks/${id}/deliveries`, as), 404, 'not_found');
    expectError(
      await call('POST', `/v1/guard/webhooks/${id}/deliveries/msg_01j8x3k2m4n5p6q7r8s9t0v1w2/retry`, as),
      404,
      'not_found',
    );
    const theirs = await call('GET', '/v1/guard/webhooks', as);
    expect(theirs.body.data).toEqual([]);
    expect((await call('GET', `/v1/guard/webhooks/${id}`)).body.data.enabled).toBe(true);
  });

  it('lets a read-only key read but not write (403)', async () => {
    const as = { key: readOnlyKey };
    expect((await call('GET', '/v1/guard/webhooks', as)).status).toBe(200);
    expect((await call('GET', `/v1/guard/webhooks/${id}`, as)).status).toBe(200);
    expect((await call('GET', `/v1/guard/webhooks/${id}/deliveries`, as)).status).toBe(200);
    expectError(
      await call('POST', '/v1/guard/webhooks', {
        ...as,
        body: { url: 'https://k.example.com', events: ['*'] },
      }),
      403,
      'forbidden',
    );
    expectError(
      await call('PATCH', `/v1/guard/webhooks/${id}`, { ...as, body: { rotate_secret: true } }),
      403,
      'forbidden',
    );
    expectError(await call('DELETE', `/v1/guard/webhooks/${id}`, as), 403, 'forbidden');
    expectError(
      await call('POST', `/v1/guard/webhooks/${id}/deliveries/msg_01j8x3k2m4n5p6q7r8s9t0v1w2/retry`, as),
      403,
      'forbidden',
    );
  });

  it('answers 404 for an unknown endpoint and an unknown delivery', async () => {
    expectError(await call('GET', '/v1/guard/webhooks/whk_01j8x3k2m4n5p6q7r8s9t0v1w2'), 404, 'not_found');
    expectError(await call('GET', '/v1/guard/webhooks/nonsense/deliveries'), 404, 'not_found');
    expectError(
      await call('POST', `/v1/guard/webhooks/${id}/deliveries/msg_01j8x3k2m4n5p6q7r8s9t0v1w2/retry`),
      404,
      'not_found',
    );
  });
});

describe('REST /v1/guard/webhooks: deliveries', () => {
  it('delivers an event of a REST change, signed so that the standardwebhooks package verifies it', async () => {
    const hook = await webhookTo('/projects', ['budgets.project.*']);
    const project = await call('POST', '/v1/guard/projects', { body: { name: 'webhooked' } });
    expect(project.status).toBe(201);

    const [delivery] = await receivedAt('/projects');
    expect(delivery!.headers['content-type']).toMatch(/^application\/cloudevents\+json/);
    expect(delivery!.id).toMatch(/^msg_/);
    expect(Number(delivery!.headers['webhook-timestamp'])).toBeCloseTo(Date.now() / 1000, -2);
    const event = verified(hook.secret, delivery!);
    expect(event).toMatchObject({
      specversion: '1.0',
      id: expect.stringMatching(/^evt_/),
      type: 'budgets.project.created',
      subject: project.body.data.id,
    });
    expect(event.data).toMatchObject({ name: 'webhooked' });
    // A forged or altered body does not verify.
    expect(() =>
      verified(hook.secret, { ...delivery!, body: delivery!.body.replace('webhooked', 'x') }),
    ).toThrow();

    const log = await eventually(async () => {
      const reply = await deliveriesOf(hook.id);
      return reply.body.data[0]?.status === 'succeeded' ? reply : undefined;
    });
    expect(log.body.meta).toEqual({ current_page: 1, per_page: 25, total_pages: 1, total_count: 1 });
    expect(log.body.data[0]).toEqual({
      id: delivery!.id,
      webhook_id: hook.id,
      event_id: event.id,
      event_type: 'budgets.project.created',
      status: 'succeeded',
      attempt_count: 1,
      next_attempt_at: null,
      attempts: [
        {
          attempt: 1,
          attempted_at: expect.any(String),
          response_status: 200,
          latency_ms: expect.any(Number),
          response_excerpt: 'ok',
          outcome: 'success',
          trigger: 'scheduled',
        },
      ],
      created_at: expect.any(String),
      updated_at: expect.any(String),
    });
    expect((await deliveriesOf(hook.id, '?event_type=budgets.project.deleted')).body.data).toEqual([]);
    expect((await deliveriesOf(hook.id, '?status=failed')).body.data).toEqual([]);
  });

  it('retries a delivery the receiver answered 500, with the same webhook-id, and logs both attempts', async () => {
    const hook = await webhookTo('/flaky', ['budgets.project.created']);
    await call('POST', '/v1/guard/projects', { body: { name: 'retried' } });

    // The first retry is due 5 s (±10 %) after the failure.
    const [first, second] = await receivedAt('/flaky', 2);
    expect(second!.id).toBe(first!.id);
    expect(verified(hook.secret, second!).type).toBe('budgets.project.created');
    const log = await eventually(async () => {
      const reply = await deliveriesOf(hook.id);
      return reply.body.data[0]?.status === 'succeeded' ? reply : undefined;
    });
    const [failed, succeeded] = log.body.data[0].attempts;
    expect(failed).toMatchObject({
      attempt: 1,
      response_status: 500,
      response_excerpt: 'receiver down for maintenance',
      outcome: 'failure',
      trigger: 'scheduled',
    });
    expect(succeeded).toMatchObject({ attempt: 2, response_status: 200, outcome: 'success' });
    expect(Date.parse(succeeded.attempted_at) - Date.parse(failed.attempted_at)).toBeGreaterThanOrEqual(
      4_500,
    );
  });

  it('retries an attempt that timed out (no status, the error logged)', async () => {
    const hook = await webhookTo('/slow', ['budgets.project.created']);
    await call('POST', '/v1/guard/projects', { body: { name: 'slow-receiver' } });
    const log = await eventually(async () => {
      const reply = await deliveriesOf(hook.id);
      return reply.body.data[0]?.status === 'succeeded' ? reply.body.data[0] : undefined;
    }, 30_000);
    expect(log.attempts).toHaveLength(2);
    expect(log.attempts[0]).toMatchObject({ attempt: 1, response_status: null, outcome: 'failure' });
    expect(log.attempts[0].response_excerpt).toMatch(/no answer within 1000 ms/);
    expect(log.attempts[1]).toMatchObject({ attempt: 2, response_status: 200, outcome: 'success' });
    const [first, second] = receiver.at('/slow');
    expect(second!.id).toBe(first!.id);
  });

  it('delivers a budget breach and its violation from a FOCUS upload, each verified', async () => {
    const hook = await webhookTo('/breach', ['budgets.budget.breached', 'violations.violation.created']);
    const connection = await call('POST', '/v1/guard/connections', {
      body: { name: 'aws-breach', provider: 'aws' },
    });
    const project = await call('POST', '/v1/guard/projects', {
      body: { name: 'breached', connection_ids: [connection.body.data.id] },
    });
    const budget = await call('POST', '/v1/guard/budgets', {
      body: {
        project_id: project.body.data.id,
        name: 'Breached cloud',
        amount: 100,
        currency: 'USD',
        period: 'monthly',
        thresholds: [100],
      },
    });
    expect(budget.status, budget.text).toBe(201);
    const upload = await fetch(`${system.url}/v1/guard/connections/${connection.body.data.id}/cost-data`, {
      method: 'POST',
      headers: { authorization: `Bearer ${bootstrapKey}`, 'content-type': 'text/csv' },
      body: focusFile([60, 55.5]),
    });
    expect(upload.status, await upload.clone().text()).toBe(200);

    const delivered = await receivedAt('/breach', 2);
    const byType = Object.fromEntries(
      delivered.map((d) => verified(hook.secret, d)).map((event) => [event.type, event]),
    );
    expect(byType['budgets.budget.breached']).toMatchObject({
      subject: budget.body.data.id,
      data: {
        budgetId: budget.body.data.id,
        projectId: project.body.data.id,
        threshold: 100,
        currentSpend: 115.5,
        currency: 'USD',
      },
    });
    expect(byType['violations.violation.created']).toMatchObject({
      data: { budgetId: budget.body.data.id, severity: 'critical' },
    });
  });

  it('sends a delivery again on a manual retry (202), logged as manual', async () => {
    const hook = await webhookTo('/manual', ['budgets.project.created']);
    await call('POST', '/v1/guard/projects', { body: { name: 'resent' } });
    const [original] = await receivedAt('/manual');
    const delivered = await eventually(async () => {
      const reply = await deliveriesOf(hook.id);
      return reply.body.data[0]?.status === 'succeeded' ? reply.body.data[0] : undefined;
    });

    const retried = await call('POST', `/v1/guard/webhooks/${hook.id}/deliveries/${delivered.id}/retry`);
    expect(retried.status, retried.text).toBe(202);
    expect(retried.body.data).toMatchObject({ id: delivered.id, status: 'pending' });

    const [, again] = await receivedAt('/manual', 2);
    expect(again!.id).toBe(original!.id);
    expect(verified(hook.secret, again!).id).toBe(verified(hook.secret, original!).id);
    const log = await eventually(async () => {
      const reply = await deliveriesOf(hook.id);
      const delivery = reply.body.data[0];
      return delivery?.status === 'succeeded' && delivery.attempts.length === 2 ? delivery : undefined;
    });
    expect(log.attempts[1]).toMatchObject({ attempt: 2, outcome: 'success', trigger: 'manual' });

    await call('PATCH', `/v1/guard/webhooks/${hook.id}`, { body: { enabled: false } });
    expectError(
      await call('POST', `/v1/guard/webhooks/${hook.id}/deliveries/${delivered.id}/retry`),
      409,
      'conflict',
    );
  });

  it('signs with both secrets during a rotation overlap, so the old and the new secret verify', async () => {
    const hook = await webhookTo('/rotated', ['budgets.project.updated']);
    const rotated = await call('PATCH', `/v1/guard/webhooks/${hook.id}`, { body: { rotate_secret: true } });
    const newSecret = rotated.body.data.secret as string;
    const project = await call('POST', '/v1/guard/projects', { body: { name: 'rotation' } });
    await call('PATCH', `/v1/guard/projects/${project.body.data.id}`, { body: { name: 'rotation-2' } });

    const [delivery] = await receivedAt('/rotated');
    expect(String(delivery!.headers['webhook-signature']).split(' ')).toHaveLength(2);
    expect(verified(hook.secret, delivery!).type).toBe('budgets.project.updated');
    expect(verified(newSecret, delivery!).type).toBe('budgets.project.updated');
  });

  it('does not deliver events of other types or of other teams', async () => {
    const hook = await webhookTo('/violations-only', ['violations.*']);
    await call('POST', '/v1/guard/projects', { body: { name: 'not-delivered' } });
    await call('POST', '/v1/guard/projects', { key: otherTeamKey, body: { name: 'other-team' } });
    // The project events reached the other endpoints of this team, so the notifier has seen them.
    await eventually(() =>
      receiver.at('/projects').some((d) => d.body.includes('not-delivered')) ? true : undefined,
    );
    expect(receiver.at('/violations-only')).toEqual([]);
    expect((await deliveriesOf(hook.id)).body.data).toEqual([]);
    expect(receiver.received.some((d) => d.body.includes('other-team'))).toBe(false);
  });
});

import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { timestampDate } from '@bufbuild/protobuf/wkt';
import { Webhook } from 'standardwebhooks';
import { ConflictError, NotFoundError } from '@costgov/errors';
import { newId } from '@costgov/ids';
import { metrics } from '@costgov/telemetry';
import { eventually } from '@costgov/testing';
import { createDispatcher } from '../src/deliveries/dispatcher';
import { retryDelaysMs } from '../src/deliveries/schedule';
import type { AttemptResult } from '../src/deliveries/send';
import { eventOf, logger, publish, startNotifier, teamCtx, violationCreated, type Fixture } from './fixture';
import { startReceiver, type Receiver } from './receiver';

const timeoutMs = 500;
let fixture: Fixture;
let receiver: Receiver;

beforeAll(async () => {
  fixture = await startNotifier({ env: { WEBHOOK_TIMEOUT_MS: `${timeoutMs}`, WEBHOOK_BATCH_SIZE: '5' } });
  receiver = await startReceiver();
});

afterAll(async () => {
  await fixture?.stop();
  await receiver?.close();
});

afterEach(async () => {
  // Each test starts with nothing due: what an earlier test left pending would be sent in the next.
  await fixture.db.query(
    `UPDATE deliveries SET status = 'failed', next_attempt_at = NULL WHERE status = 'pending'`,
  );
  receiver.received.length = 0;
  receiver.answer(() => ({ status: 204 }));
  fixture.clock.set(new Date());
});

const dispatch = () => fixture.notifiers[0]!.module.dispatcher().runOnce();

/** A dispatcher on the fixture's database whose attempts end when the test says. */
function heldDispatcher(batchSize = 10) {
  const pending: Array<(result: AttemptResult) => void> = [];
  const dispatcher = createDispatcher({
    db: fixture.db,
    send: () => new Promise((resolve) => pending.push(resolve)),
    now: fixture.clock.now,
    logger,
    leaseMs: 60_000,
    batchSize,
    pollMs: 1_000,
    retentionMs: 30 * 24 * 3600_000,
  });
  return { dispatcher, pending };
}

/** Waits until a delivery of the webhook is held by a lease. */
async function leased(webhookId: string): Promise<void> {
  await eventually(async () => {
    const { rows } = await fixture.db.query(
      'SELECT 1 FROM deliveries WHERE webhook_id = $1 AND lease_token IS NOT NULL',
      [webhookId],
    );
    return rows.length > 0 ? true : undefined;
  });
}

async function createHook(events: string[], ctx = teamCtx(newId('team')), path = '/hook') {
  const { webhook, secret } = await fixture.client.createWebhook(
    { url: receiver.url(path), events, description: '' },
    ctx,
  );
  return { id: webhook!.id, secret: secret!, ctx };
}

async function deliveriesOf(hook: { id: string; ctx: { teamId: string } }) {
  return (await fixture.client.listDeliveries({ webhookId: hook.id }, hook.ctx)).deliveries;
}

describe('delivery', () => {
  it('sends each event to every matching enabled endpoint of its team, signed as Standard Webhooks says', async () => {
    const ctx = teamCtx(newId('team'));
    const hook = await createHook(['violations.*'], ctx, '/match');
    const other = await createHook(['budgets.*'], ctx, '/other-types');
    const off = await createHook(['*'], ctx, '/disabled');
    await fixture.client.updateWebhook({ id: off.id, enabled: false }, ctx);
    const foreign = await createHook(['*'], teamCtx(newId('team')), '/other-team');
    const event = violationCreated(ctx.teamId);
    await publish(fixture, event);
    expect(await dispatch()).toBe(1);

    expect(receiver.received.map((r) => r.path)).toEqual(['/match']);
    const [request] = receiver.received;
    // Verified by the standardwebhooks package, not by code of ours.
    const body = new Webhook(hook.secret).verify(request!.body, request!.headers);
    const { traceparent: _, tracestate: __, ...cloudEvent } = event;
    expect(body).toEqual(cloudEvent);
    expect(request!.headers).toMatchObject({
      'content-type': 'application/cloudevents+json; charset=utf-8',
      'webhook-id': expect.stringMatching(/^msg_/),
      'user-agent': expect.stringMatching(/^costgov-webhooks\//),
    });

    const [delivery] = await deliveriesOf(hook);
    expect(delivery).toMatchObject({
      id: request!.headers['webhook-id'],
      webhookId: hook.id,
      eventId: event.id,
      eventType: 'violations.violation.created',
      status: 'succeeded',
      attempts: 1,
    });
    expect(delivery!.nextAttemptAt).toBeUndefined();
    expect(delivery!.attemptLog).toMatchObject([
      { attempt: 1, responseStatus: 204, outcome: 'success', trigger: 'scheduled', responseExcerpt: '' },
    ]);
    for (const none of [other, off, foreign]) expect(await deliveriesOf(none)).toEqual([]);
  });

  it('makes one delivery of an event however often the bus brings it', async () => {
    const hook = await createHook(['violations.*']);
    const event = violationCreated(hook.ctx.teamId);
    await publish(fixture, event);
    await fixture.bus.publish({ ...event }, { dedupeId: `${event.id}-replayed` });
    await fixture.bus.publish(violationCreated(hook.ctx.teamId)); // a later event, to know the replay was handled
    await eventually(async () => ((await deliveriesOf(hook)).length === 2 ? true : undefined));
    expect((await deliveriesOf(hook)).filter((d) => d.eventId === event.id)).toHaveLength(1);
  });

  it('signs with the old and the new secret during a rotation overlap, and with the new one after it', async () => {
    const hook = await createHook(['violations.violation.created']);
    const rotated = await fixture.client.updateWebhook({ id: hook.id, rotateSecret: true }, hook.ctx);
    await publish(fixture, violationCreated(hook.ctx.teamId));
    await dispatch();
    const [during] = receiver.received;
    expect(during!.headers['webhook-signature']!.split(' ')).toHaveLength(2);
    expect(() => new Webhook(hook.secret).verify(during!.body, during!.headers)).not.toThrow();
    expect(() => new Webhook(rotated.secret!).verify(during!.body, during!.headers)).not.toThrow();

    const again = await fixture.client.updateWebhook(
      { id: hook.id, rotateSecret: true, previousSecretTtlSeconds: 1n },
      hook.ctx,
    );
    fixture.clock.advance(2_000); // the overlap of 1 s is over
    await publish(fixture, violationCreated(hook.ctx.teamId));
    await dispatch();
    const after = receiver.received[1]!;
    expect(after.headers['webhook-signature']!.split(' ')).toHaveLength(1);
    expect(() => new Webhook(again.secret!).verify(after.body, after.headers)).not.toThrow();
    expect(() => new Webhook(rotated.secret!).verify(after.body, after.headers)).toThrow();
  });

  it('lists deliveries newest first, filtered by status and event type, paged', async () => {
    const hook = await createHook(['*']);
    receiver.answer((r) => (r.body.includes('budgets.budget.breached') ? { status: 500 } : { status: 200 }));
    await publish(fixture, violationCreated(hook.ctx.teamId));
    await publish(fixture, eventOf('budgets.budget.breached', hook.ctx.teamId));
    await publish(fixture, eventOf('scanner.scan.completed', hook.ctx.teamId));
    await publish(fixture, eventOf('scanner.scan.requested', hook.ctx.teamId)); // internal: never delivered
    await dispatch();
    const all = await deliveriesOf(hook);
    expect(all.map((d) => d.eventType)).toEqual([
      'scanner.scan.completed',
      'budgets.budget.breached',
      'violations.violation.created',
    ]);
    const list = (filter: {
      status?: string;
      eventType?: string;
      page?: { page: number; perPage: number };
    }) => fixture.client.listDeliveries({ webhookId: hook.id, ...filter }, hook.ctx);
    expect((await list({ status: 'pending' })).deliveries.map((d) => d.eventType)).toEqual([
      'budgets.budget.breached',
    ]);
    expect((await list({ eventType: 'scanner.scan.completed' })).deliveries).toHaveLength(1);
    const page = await list({ page: { page: 2, perPage: 2 } });
    expect(page.deliveries.map((d) => d.eventType)).toEqual(['violations.violation.created']);
    expect(page.meta).toMatchObject({ totalCount: 3, totalPages: 2 });
    await expect(list({ status: 'lost' })).rejects.toThrow('Unknown status');
  });
});

describe('retries', () => {
  it('follow 5 s, 5 min, 30 min, 2 h, 5 h, 10 h, 10 h with ±10 % jitter after 500s, then fail; a manual retry sends again', async () => {
    const hook = await createHook(['violations.*']);
    receiver.answer(() => ({ status: 500, body: 'x'.repeat(3000) }));
    await publish(fixture, violationCreated(hook.ctx.teamId));
    for (let attempt = 1; attempt <= 8; attempt++) {
      const at = fixture.clock.now().getTime();
      expect(await dispatch()).toBe(1);
      const [delivery] = await deliveriesOf(hook);
      expect(delivery!.attempts).toBe(attempt);
      expect(delivery!.attemptLog[attempt - 1]).toMatchObject({
        attempt,
        responseStatus: 500,
        outcome: 'failure',
        trigger: 'scheduled',
        responseExcerpt: 'x'.repeat(1024),
      });
      if (attempt === 8) {
        expect(delivery!.status).toBe('failed');
        expect(delivery!.nextAttemptAt).toBeUndefined();
        break;
      }
      expect(delivery!.status).toBe('pending');
      const delay = retryDelaysMs[attempt - 1]!;
      const next = timestampDate(delivery!.nextAttemptAt!).getTime() - at;
      expect(next).toBeGreaterThanOrEqual(delay * 0.9);
      expect(next).toBeLessThanOrEqual(delay * 1.1);
      fixture.clock.advance(next - 1);
      expect(await dispatch()).toBe(0); // not due yet
      fixture.clock.advance(1);
    }
    fixture.clock.advance(30 * 3600_000);
    expect(await dispatch()).toBe(0);
    expect(receiver.received.map((r) => r.headers['webhook-id'])).toEqual(
      Array(8).fill(receiver.received[0]!.headers['webhook-id']),
    );

    // The endpoint is mended; a manual retry of the failed delivery succeeds with the same webhook-id.
    receiver.answer(() => ({ status: 200, body: 'ok' }));
    const [failed] = await deliveriesOf(hook);
    const retried = await fixture.client.retryDelivery(
      { webhookId: hook.id, deliveryId: failed!.id },
      hook.ctx,
    );
    expect(retried).toMatchObject({ status: 'pending', attempts: 8 });
    expect(await dispatch()).toBe(1);
    const [done] = await deliveriesOf(hook);
    expect(done).toMatchObject({ status: 'succeeded', attempts: 9 });
    expect(done!.attemptLog[8]).toMatchObject({
      attempt: 9,
      responseStatus: 200,
      outcome: 'success',
      trigger: 'manual',
      responseExcerpt: 'ok',
    });
    expect(receiver.received.at(-1)!.headers['webhook-id']).toBe(failed!.id);
  });

  it('follow the schedule after a timeout', async () => {
    const hook = await createHook(['violations.*']);
    receiver.answer(() => 'hang');
    await publish(fixture, violationCreated(hook.ctx.teamId));
    const at = fixture.clock.now().getTime();
    expect(await dispatch()).toBe(1);
    const [delivery] = await deliveriesOf(hook);
    expect(delivery!.attemptLog).toMatchObject([
      {
        attempt: 1,
        responseStatus: 0,
        outcome: 'failure',
        responseExcerpt: `no answer within ${timeoutMs} ms`,
      },
    ]);
    const next = timestampDate(delivery!.nextAttemptAt!).getTime() - at;
    expect(next).toBeGreaterThanOrEqual(4_500);
    expect(next).toBeLessThanOrEqual(5_500);
  });

  it('a manual retry asked for while an attempt is under way is made after it, even when that was the last scheduled one', async () => {
    const hook = await createHook(['violations.*']);
    await publish(fixture, violationCreated(hook.ctx.teamId));
    // Seven scheduled attempts are used up: the next failure is the last.
    await fixture.db.query('UPDATE deliveries SET scheduled_attempts = 7 WHERE webhook_id = $1', [hook.id]);
    const held = heldDispatcher();
    const run = held.dispatcher.runOnce();
    await leased(hook.id);
    await eventually(() => (held.pending.length === 1 ? true : undefined));
    const [delivery] = await deliveriesOf(hook);
    const retried = await fixture.client.retryDelivery(
      { webhookId: hook.id, deliveryId: delivery!.id },
      hook.ctx,
    );
    expect(retried.status).toBe('pending');
    held.pending[0]!({ status: 500, excerpt: 'down' });
    expect(await run).toBe(1);
    const [after] = await deliveriesOf(hook);
    expect(after).toMatchObject({ status: 'pending', attempts: 1 });
    expect(timestampDate(after!.nextAttemptAt!).getTime()).toBeLessThanOrEqual(fixture.clock.now().getTime());
    // The owed manual attempt is made; another retry asked for while it is under way is owed too.
    const second = held.dispatcher.runOnce();
    await eventually(() => (held.pending.length === 2 ? true : undefined));
    await fixture.client.retryDelivery({ webhookId: hook.id, deliveryId: delivery!.id }, hook.ctx);
    held.pending[1]!({ status: 500, excerpt: 'still down' });
    expect(await second).toBe(1);
    const [again] = await deliveriesOf(hook);
    expect(again).toMatchObject({ status: 'pending', attempts: 2 });
    expect(await dispatch()).toBe(1);
    const [done] = await deliveriesOf(hook);
    expect(done).toMatchObject({ status: 'succeeded', attempts: 3 });
    expect(done!.attemptLog.map((a) => a.trigger)).toEqual(['scheduled', 'manual', 'manual']);
    expect(await dispatch()).toBe(0); // every request was answered
  });

  it('a manual retry waits for an endpoint being disabled, and is refused then', async () => {
    const hook = await createHook(['violations.*']);
    await publish(fixture, violationCreated(hook.ctx.teamId));
    const [delivery] = await deliveriesOf(hook);
    let retry: Promise<unknown> | undefined;
    let settled = false;
    await fixture.db.transaction(async (tx) => {
      // As a dispatcher's record does when it disables the endpoint as failing.
      await tx.query('SELECT 1 FROM webhooks WHERE id = $1 FOR UPDATE', [hook.id]);
      retry = fixture.client
        .retryDelivery({ webhookId: hook.id, deliveryId: delivery!.id }, hook.ctx)
        .finally(() => (settled = true));
      retry.catch(() => undefined);
      if (fixture.db.kind === 'postgres') {
        // The retry waits for the endpoint's row lock (or, unlocked, is already answered).
        await eventually(async () => {
          const { rows } = await fixture.db.query(
            `SELECT 1 FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND datname = current_database()`,
          );
          return rows.length > 0 || settled ? true : undefined;
        });
      }
      await tx.query(
        `UPDATE webhooks SET enabled = false, disabled_reason = 'failing', disabled_at = now() WHERE id = $1`,
        [hook.id],
      );
      await tx.query(
        `UPDATE deliveries SET status = 'failed', next_attempt_at = NULL WHERE webhook_id = $1 AND status = 'pending'`,
        [hook.id],
      );
    });
    await expect(retry).rejects.toThrow(ConflictError);
    const [after] = await deliveriesOf(hook);
    expect(after!.status).toBe('failed');
  });

  it('an attempt that cannot be made (unsignable secret, invalid URL) is a failed attempt, not retried every lease', async () => {
    const hook = await createHook(['violations.*']);
    await fixture.db.query(`UPDATE webhooks SET secret = 'whsec_!!!' WHERE id = $1`, [hook.id]);
    await publish(fixture, violationCreated(hook.ctx.teamId));
    expect(await dispatch()).toBe(1);
    const [unsigned] = await deliveriesOf(hook);
    expect(unsigned).toMatchObject({ status: 'pending', attempts: 1 });
    expect(unsigned!.attemptLog).toMatchObject([
      { responseStatus: 0, outcome: 'failure', responseExcerpt: 'the request could not be signed' },
    ]);

    const other = await createHook(['violations.*']);
    await fixture.db.query(`UPDATE webhooks SET url = 'http://exa mple.test/?token=s3cret' WHERE id = $1`, [
      other.id,
    ]);
    await publish(fixture, violationCreated(other.ctx.teamId));
    expect(await dispatch()).toBe(1);
    const [invalid] = await deliveriesOf(other);
    expect(invalid).toMatchObject({ status: 'pending', attempts: 1 });
    expect(invalid!.attemptLog[0]).toMatchObject({ responseStatus: 0, outcome: 'failure' });
    expect(invalid!.attemptLog[0]!.responseExcerpt).not.toContain('s3cret');
    expect(receiver.received).toHaveLength(0);
  });

  it('a manual retry is refused for an unknown delivery and on a disabled endpoint', async () => {
    const hook = await createHook(['violations.*']);
    await expect(
      fixture.client.retryDelivery({ webhookId: hook.id, deliveryId: newId('webhookMessage') }, hook.ctx),
    ).rejects.toThrow(NotFoundError);
    await publish(fixture, violationCreated(hook.ctx.teamId));
    const [delivery] = await deliveriesOf(hook);
    const elsewhere = await createHook(['violations.*'], hook.ctx);
    await expect(
      fixture.client.retryDelivery({ webhookId: elsewhere.id, deliveryId: delivery!.id }, hook.ctx),
    ).rejects.toThrow(NotFoundError);
    await fixture.client.updateWebhook({ id: hook.id, enabled: false }, hook.ctx);
    await expect(
      fixture.client.retryDelivery({ webhookId: hook.id, deliveryId: delivery!.id }, hook.ctx),
    ).rejects.toThrow(ConflictError);
  });
});

describe('a failing endpoint', () => {
  it('is disabled as failing once no attempt succeeded for 5 days; its pending deliveries fail', async () => {
    const hook = await createHook(['violations.*']);
    receiver.answer(() => ({ status: 503 }));
    const start = fixture.clock.now().getTime();
    const day = 24 * 3600_000;
    // A new event every day keeps the endpoint tried; every attempt fails.
    for (let d = 0; d < 5; d++) {
      fixture.clock.set(new Date(start + d * day));
      await publish(fixture, violationCreated(hook.ctx.teamId));
      await dispatch();
      expect((await fixture.client.getWebhook({ id: hook.id }, hook.ctx)).enabled).toBe(true);
    }
    // A delivery whose next attempt is not yet due is ended too.
    fixture.clock.set(new Date(start + 5 * day - 2_000));
    await publish(fixture, violationCreated(hook.ctx.teamId));
    await dispatch();
    fixture.clock.set(new Date(start + 5 * day));
    await publish(fixture, violationCreated(hook.ctx.teamId));
    expect(await dispatch()).toBeGreaterThan(0);
    const webhook = await fixture.client.getWebhook({ id: hook.id }, hook.ctx);
    expect(webhook).toMatchObject({ enabled: false, disabledReason: 'failing' });
    expect(timestampDate(webhook.disabledAt!).getTime()).toBe(start + 5 * day);
    const deliveries = await deliveriesOf(hook);
    expect(deliveries).toHaveLength(7);
    expect(deliveries.map((d) => d.status)).toEqual(Array(7).fill('failed'));
    // The one not yet due was not attempted again: it was ended by the disabling.
    expect(deliveries[1]!.attempts).toBe(1);
    fixture.clock.advance(day);
    expect(await dispatch()).toBe(0);
    // New events are not delivered to a disabled endpoint.
    await publish(fixture, violationCreated(hook.ctx.teamId));
    expect(await deliveriesOf(hook)).toHaveLength(7);
  });

  it('ends too the pending deliveries a killed replica left with a lease that ran out', async () => {
    const hook = await createHook(['violations.*']);
    await publish(fixture, violationCreated(hook.ctx.teamId), violationCreated(hook.ctx.teamId));
    const at = fixture.clock.now().getTime();
    await fixture.db.query('UPDATE webhooks SET failing_since = $2 WHERE id = $1', [
      hook.id,
      new Date(at - 5 * 24 * 3600_000 - 1_000),
    ]);
    const [orphan, first] = await deliveriesOf(hook); // newest first
    await fixture.db.query('UPDATE deliveries SET next_attempt_at = $2 WHERE id = $1', [
      first!.id,
      new Date(at - 2_000),
    ]);
    // Claimed by a replica that was killed: its lease ran out a second ago.
    await fixture.db.query(
      `UPDATE deliveries SET next_attempt_at = $2, lease_token = 'killed-replica', lease_until = $3 WHERE id = $1`,
      [orphan!.id, new Date(at - 1_000), new Date(at - 1_000)],
    );
    const failing = createDispatcher({
      db: fixture.db,
      send: async () => ({ status: 503, excerpt: '' }),
      now: fixture.clock.now,
      logger,
      leaseMs: 60_000,
      batchSize: 1,
      pollMs: 1_000,
      retentionMs: 30 * 24 * 3600_000,
    });
    expect(await failing.runOnce()).toBe(1);
    expect(await fixture.client.getWebhook({ id: hook.id }, hook.ctx)).toMatchObject({
      enabled: false,
      disabledReason: 'failing',
    });
    const deliveries = await deliveriesOf(hook);
    expect(deliveries.map((d) => [d.id, d.status, d.attempts])).toEqual([
      [orphan!.id, 'failed', 0],
      [first!.id, 'failed', 1],
    ]);
  });

  it('is not disabled while some attempt succeeds', async () => {
    const hook = await createHook(['violations.*']);
    const start = fixture.clock.now().getTime();
    const day = 24 * 3600_000;
    for (let d = 0; d <= 6; d++) {
      fixture.clock.set(new Date(start + d * day));
      receiver.answer(() => ({ status: d === 3 ? 200 : 500 }));
      await publish(fixture, violationCreated(hook.ctx.teamId));
      await dispatch();
    }
    expect((await fixture.client.getWebhook({ id: hook.id }, hook.ctx)).enabled).toBe(true);
  });
});

describe('metrics', () => {
  /** A series' value; `webhook_delivery_duration_seconds_count` is read from its histogram. */
  const value = async (name: string, labels: Record<string, string>) => {
    const metric = await metrics.registry.getSingleMetric(name.replace(/_count$/, ''))!.get();
    const match = metric.values.find(
      (v) =>
        ((v as { metricName?: string }).metricName ?? name) === name &&
        Object.entries(labels).every(([key, want]) => v.labels[key] === want),
    );
    return match?.value ?? 0;
  };

  it('count attempts by outcome and time them', async () => {
    const hook = await createHook(['violations.*']);
    const before = {
      success: await value('webhook_deliveries_total', { outcome: 'success', trigger: 'scheduled' }),
      failure: await value('webhook_deliveries_total', { outcome: 'failure', trigger: 'scheduled' }),
      timed: await value('webhook_delivery_duration_seconds_count', { outcome: 'failure' }),
    };
    await publish(fixture, violationCreated(hook.ctx.teamId));
    await dispatch();
    receiver.answer(() => ({ status: 500 }));
    await publish(fixture, violationCreated(hook.ctx.teamId));
    await dispatch();
    expect(await value('webhook_deliveries_total', { outcome: 'success', trigger: 'scheduled' })).toBe(
      before.success + 1,
    );
    expect(await value('webhook_deliveries_total', { outcome: 'failure', trigger: 'scheduled' })).toBe(
      before.failure + 1,
    );
    expect(await value('webhook_delivery_duration_seconds_count', { outcome: 'failure' })).toBe(
      before.timed + 1,
    );
  });
});

describe('the delivery log', () => {
  it('keeps finished deliveries for the retention (30 days), pending ones whatever their age', async () => {
    const hook = await createHook(['violations.*']);
    await publish(fixture, violationCreated(hook.ctx.teamId));
    await dispatch();
    receiver.answer(() => ({ status: 500 }));
    await publish(fixture, violationCreated(hook.ctx.teamId));
    await dispatch();
    const dispatcher = fixture.notifiers[0]!.module.dispatcher();
    fixture.clock.advance(30 * 24 * 3600_000 - 60_000);
    await dispatcher.sweep();
    expect((await deliveriesOf(hook)).map((d) => d.status)).toEqual(['pending', 'succeeded']);
    fixture.clock.advance(120_000);
    await dispatcher.sweep();
    expect((await deliveriesOf(hook)).map((d) => d.status)).toEqual(['pending']);
    const { rows } = await fixture.db.query(
      'SELECT count(*)::int AS n FROM delivery_attempts a JOIN deliveries d ON d.id = a.delivery_id WHERE d.webhook_id = $1',
      [hook.id],
    );
    expect(rows[0]).toEqual({ n: 1 });
  });
});

describe('replicas', () => {
  it('two dispatchers on one database deliver each delivery once', async () => {
    const second = await fixture.addReplica();
    const hook = await createHook(['violations.*']);
    const events = Array.from({ length: 24 }, () => violationCreated(hook.ctx.teamId));
    await publish(fixture, ...events);
    const dispatchers = [fixture.notifiers[0]!.module.dispatcher(), second.module.dispatcher()];
    await eventually(async () => {
      await Promise.all(dispatchers.map((d) => d.runOnce()));
      const list = await fixture.client.listDeliveries({ webhookId: hook.id, status: 'pending' }, hook.ctx);
      return list.meta?.totalCount === 0 ? true : undefined;
    });
    const ids = receiver.received.map((r) => r.headers['webhook-id']);
    expect(ids).toHaveLength(24);
    expect(new Set(ids).size).toBe(24);
    const delivered = await fixture.client.listDeliveries(
      { webhookId: hook.id, page: { page: 1, perPage: 100 } },
      hook.ctx,
    );
    expect(delivered.deliveries.map((d) => d.attempts)).toEqual(Array(24).fill(1));
  });

  it('a delivery claimed by a replica that stopped answering is taken again after the lease; the late attempt is not recorded', async () => {
    const hook = await createHook(['violations.*']);
    await publish(fixture, violationCreated(hook.ctx.teamId));
    let finish: (result: AttemptResult) => void = () => undefined;
    const stuck = createDispatcher({
      db: fixture.db,
      send: () => new Promise((resolve) => (finish = resolve)),
      now: fixture.clock.now,
      logger,
      leaseMs: 60_000,
      batchSize: 10,
      pollMs: 1_000,
      retentionMs: 30 * 24 * 3600_000,
    });
    const stuckRun = stuck.runOnce();
    await eventually(async () => {
      const { rows } = await fixture.db.query(
        'SELECT 1 FROM deliveries WHERE webhook_id = $1 AND lease_token IS NOT NULL',
        [hook.id],
      );
      return rows.length > 0 ? true : undefined;
    });
    expect(await dispatch()).toBe(0); // held by the lease
    fixture.clock.advance(60_001);
    expect(await dispatch()).toBe(1);
    finish({ status: 200, excerpt: 'late' });
    await stuckRun;
    const [delivery] = await deliveriesOf(hook);
    expect(delivery).toMatchObject({ status: 'succeeded', attempts: 1 });
    expect(delivery!.attemptLog.map((a) => a.responseExcerpt)).toEqual(['']);
    expect(receiver.received).toHaveLength(1);
  });
});

import { Webhook as StandardWebhook } from 'standardwebhooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  deleteStreams,
  eventually,
  realInfra,
  startBackends,
  startGatewayProcess,
  uniqueName,
  type Backends,
  type Proc,
  createTestDatabase,
  startReplica,
  type TestDatabase,
} from '@costgov/testing';
import {
  startWebhookReceiver,
  type ReceivedDelivery,
  type WebhookReceiver,
} from './support/webhook-receiver';

const apiKey = 'cg_live_webhookprocessesbootstrapkey0000000';
/** Deliveries one notifier replica claims at once: more in flight than this means both replicas hold some. */
const batchSize = 5;
/** The receiver's answer time on the slow path, so that deliveries are in flight when a replica dies. */
const slowAnswerMs = 1_500;

/**
 * Two notifier replicas (every service its own process) on one database and one NATS stream: each event
 * is delivered exactly once across them, and when one is killed with SIGKILL while it holds deliveries
 * in flight, none is lost (resends keep their webhook-id). Needs real Postgres and NATS: on the
 * embedded default each process would have a database and a bus of its own.
 */
describe.runIf(realInfra)('webhook deliveries across two notifier processes', () => {
  const namespace = uniqueName('whk');
  const procs: Proc[] = [];
  let backends: Backends;
  let url = '';
  let receiver: WebhookReceiver;
  let database: TestDatabase;

  const call = async (method: string, path: string, body?: unknown) => {
    const response = await fetch(`${url}${path}`, {
      method,
      headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await response.text();
    return { status: response.status, text, body: text ? JSON.parse(text) : undefined };
  };
  /** Another notifier replica on the shared database and stream. */
  const startNotifier = (name: string) =>
    startReplica(name, 'services/notifier/src/main.ts', backends.env, procs);
  const webhookTo = async (path: string) => {
    const reply = await call('POST', '/v1/guard/webhooks', {
      url: receiver.url(path),
      events: ['budgets.project.created'],
    });
    expect(reply.status, reply.text).toBe(201);
    return reply.body.data as { id: string; secret: string };
  };
  /** Creates `count` projects (one `budgets.project.created` each) and returns their ids. */
  const createProjects = async (prefix: string, count: number) => {
    const ids: string[] = [];
    for (let i = 0; i < count; i++) {
      const reply = await call('POST', '/v1/guard/projects', { name: `${prefix}-${i}` });
      expect(reply.status, reply.text).toBe(201);
      ids.push(reply.body.data.id);
    }
    return ids;
  };
  /** Every request at `path`, verified with the endpoint's secret, as webhook-id → event subject. */
  const verifiedAt = (path: string, secret: string) =>
    receiver.at(path).map((delivery: ReceivedDelivery) => {
      const event = new StandardWebhook(secret).verify(
        delivery.body,
        delivery.headers as Record<string, string>,
      ) as { id: string; subject: string };
      return { webhookId: delivery.id, eventId: event.id, subject: event.subject };
    });
  /** The endpoint's deliveries once all `count` have succeeded. */
  const allSucceeded = (webhookId: string, count: number) =>
    eventually(async () => {
      const reply = await call(
        'GET',
        `/v1/guard/webhooks/${webhookId}/deliveries?status=succeeded&per_page=100`,
      );
      return reply.body?.meta?.total_count === count
        ? (reply.body.data as Array<Record<string, unknown>>)
        : undefined;
    }, 90_000);

  beforeAll(async () => {
    // On `/slow` the first attempt of each delivery fails at once, so the retries fall due together
    // (5 s later) and both replicas claim full batches; the retries are answered slowly.
    receiver = await startWebhookReceiver((delivery) => {
      if (delivery.path !== '/slow') return { status: 200 };
      const attempts = receiver.received.filter((d) => d.id === delivery.id).length;
      return attempts === 1 ? { status: 500 } : { status: 200, delayMs: slowAnswerMs };
    });
    database = await createTestDatabase('whk');
    backends = await startBackends(
      {
        DATABASE_URL: database.url,
        NATS_URL: process.env.NATS_URL,
        EVENT_NAMESPACE: namespace,
        GUARD_BOOTSTRAP_API_KEY: apiKey,
        // The SSRF guard stays on but for the test's receiver.
        WEBHOOK_ALLOWED_HOSTS: '127.0.0.1',
        WEBHOOK_BATCH_SIZE: String(batchSize),
        // A killed replica's claims return after the lease (at least twice the attempt timeout).
        WEBHOOK_TIMEOUT_MS: '2000',
        WEBHOOK_LEASE_MS: '4000',
        // Due retries are looked for every 2 s (new deliveries wake the replicas at once).
        WEBHOOK_POLL_MS: '2000',
      },
      procs,
    );
    url = (await startGatewayProcess('gateway', backends, {}, procs)).url;
    await startNotifier('notifier-2');
  }, 180_000);

  afterAll(async () => {
    await Promise.all(procs.map((p) => p.stop()));
    await receiver?.close();
    await database?.drop();
    await deleteStreams(process.env.NATS_URL!, namespace);
  }, 60_000);

  it('delivers each of 40 events exactly once across the two replicas', async () => {
    const hook = await webhookTo('/once');
    const projects = await createProjects('once', 40);

    const deliveries = await allSucceeded(hook.id, projects.length);
    expect(deliveries.every((d) => d.attempt_count === 1)).toBe(true);
    const received = verifiedAt('/once', hook.secret);
    expect(received.map((r) => r.subject).sort()).toEqual([...projects].sort());
    expect(new Set(received.map((r) => r.webhookId)).size).toBe(projects.length);
    expect(new Set(received.map((r) => r.eventId)).size).toBe(projects.length);
  }, 120_000);

  it('loses no delivery when a replica is killed with deliveries in flight, and resends keep their webhook-id', async () => {
    const hook = await webhookTo('/slow');
    const projects = await createProjects('killed', 30);

    // More requests waiting for an answer than one replica claims: both replicas hold some.
    await eventually(() => (receiver.inFlight() > batchSize ? true : undefined), 60_000);
    const victim = procs.find((p) => p.name === 'notifier-2' && p.child.exitCode === null)!;
    victim.child.kill('SIGKILL');
    await new Promise((resolve) => victim.child.once('exit', resolve));
    await startNotifier('notifier-2-restarted');

    await allSucceeded(hook.id, projects.length);
    const received = verifiedAt('/slow', hook.secret);
    // At least once: every project's event arrived.
    expect(new Set(received.map((r) => r.subject))).toEqual(new Set(projects));
    // A resend is the same delivery: one webhook-id per event, whatever the number of requests.
    const eventOf = new Map<string, string>();
    for (const { webhookId, eventId } of received) {
      expect(eventOf.get(webhookId) ?? eventId).toBe(eventId);
      eventOf.set(webhookId, eventId);
    }
    expect(eventOf.size).toBe(projects.length);
    // The killed replica's answered-but-unrecorded attempts were sent again once its lease ran out:
    // those deliveries reached the receiver three times (the failed first attempt, the lost one, the resend).
    const requestsPerDelivery = [...eventOf.keys()].map(
      (id) => received.filter((r) => r.webhookId === id).length,
    );
    expect(Math.max(...requestsPerDelivery)).toBeGreaterThanOrEqual(3);
  }, 180_000);
});

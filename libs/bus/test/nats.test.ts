import { DiscardPolicy, jetstreamManager, StorageType, type JetStreamManager } from '@nats-io/jetstream';
import { connect, nanos, type Msg, type NatsConnection } from '@nats-io/transport-node';
import pino from 'pino';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { deleteStreams, eventually, uniqueName } from '@costgov/testing';
import { outageMaxDeliver, type Bus } from '../src/bus';
import { consumerName, streamName } from '../src/jetstream-setup';
import { createNatsBus } from '../src/nats';
import { natsUrl, testEvent } from './support';

// What only JetStream shows: the wire format and the server objects. Behaviour shared with the
// in-process bus is in bus.test.ts.
describe.skipIf(!natsUrl)('NATS JetStream layout', () => {
  const url = natsUrl ?? '';
  let namespace: string;
  let bus: Bus;
  let nc: NatsConnection;
  let jsm: JetStreamManager;

  beforeEach(async () => {
    namespace = uniqueName('t');
    bus = await createNatsBus({ url, namespace, logger: pino({ level: 'silent' }) });
    nc = await connect({ servers: url });
    jsm = await jetstreamManager(nc);
  });
  afterEach(async () => {
    await bus.close();
    await nc.close();
    await deleteStreams(url, namespace);
  });

  it('sends binary-mode CloudEvents: ce-* headers, JSON body, Nats-Msg-Id = event id', async () => {
    const seen: Msg[] = [];
    const subscription = nc.subscribe(`${namespace}.budgets.>`, {
      callback: (_, msg) => void seen.push(msg),
    });
    await nc.flush();
    const event = testEvent({
      traceparent: '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01',
      tracestate: 'vendor=1',
    });
    await bus.publish(event);
    await eventually(() => expect(seen).toHaveLength(1));
    subscription.unsubscribe();

    const msg = seen[0]!;
    expect(msg.subject).toBe(`${namespace}.budgets.project.deleted`);
    expect(msg.json()).toEqual(event.data);
    const headers = Object.fromEntries(msg.headers!.keys().map((key) => [key, msg.headers!.get(key)]));
    expect(headers).toEqual({
      'ce-specversion': '1.0',
      'ce-id': event.id,
      'ce-source': 'budgets',
      'ce-type': 'budgets.project.deleted',
      'ce-subject': event.subject,
      'ce-time': event.time,
      'content-type': 'application/json',
      // Without a registered tracer the publish span is the event's own context, passed on as is.
      traceparent: event.traceparent,
      tracestate: 'vendor=1',
      'Nats-Msg-Id': event.id,
    });
  });

  it('keeps one file stream per producing service with a two-minute duplicate window', async () => {
    await bus.publish(testEvent({ type: 'scanner.scan.completed', source: 'scanner' }));
    const info = await jsm.streams.info(streamName(namespace, 'scanner'));
    expect(info.config).toMatchObject({
      name: `${namespace}_SCANNER`.toUpperCase(),
      subjects: [`${namespace}.scanner.>`],
      storage: StorageType.File,
      duplicate_window: nanos(120_000),
    });
  });

  it('gives new streams the default limits: one replica, seven days, no size limit, discard old', async () => {
    await bus.publish(testEvent({ type: 'scanner.scan.completed', source: 'scanner' }));
    const { config } = await jsm.streams.info(streamName(namespace, 'scanner'));
    expect(config.num_replicas).toBe(1);
    expect(config.max_age).toBe(nanos(7 * 24 * 60 * 60 * 1000));
    expect(config.max_bytes).toBe(-1);
    expect(config.discard).toBe(DiscardPolicy.Old);
  });

  it('brings a stream created with other limits to the configured ones at start, and says what changed', async () => {
    const name = streamName(namespace, 'budgets');
    await jsm.streams.add({
      name,
      subjects: [`${namespace}.budgets.>`],
      storage: StorageType.File,
      max_age: nanos(60 * 60 * 1000),
      max_bytes: 1024 * 1024,
      discard: DiscardPolicy.New,
      duplicate_window: nanos(120_000),
    });
    const logged: unknown[] = [];
    const logger = pino({ level: 'info' }, { write: (line: string) => void logged.push(JSON.parse(line)) });
    const limits = { replicas: 1, maxAgeMs: 3 * 24 * 60 * 60 * 1000, maxBytes: 50 * 1024 * 1024 };
    const configured = await createNatsBus({ url, namespace, logger, streamLimits: limits });
    try {
      await configured.publish(testEvent());
      const { config } = await jsm.streams.info(name);
      expect(config.max_age).toBe(nanos(limits.maxAgeMs));
      expect(config.max_bytes).toBe(limits.maxBytes);
      expect(config.discard).toBe(DiscardPolicy.New);
      expect(logged).toContainEqual(
        expect.objectContaining({
          msg: 'stream settings updated',
          stream: name,
          changed: expect.arrayContaining([
            { setting: 'max_age', from: nanos(60 * 60 * 1000), to: nanos(limits.maxAgeMs) },
            { setting: 'max_bytes', from: 1024 * 1024, to: limits.maxBytes },
          ]),
        }),
      );
    } finally {
      await configured.close();
    }
    // Back to the defaults: unlimited size again, discard old; the events kept stay.
    const defaults = await createNatsBus({ url, namespace, logger: pino({ level: 'silent' }) });
    try {
      await defaults.publish(testEvent());
      const info = await jsm.streams.info(name);
      expect(info.config.max_bytes).toBe(-1);
      expect(info.config.discard).toBe(DiscardPolicy.Old);
      expect(info.config.max_age).toBe(nanos(7 * 24 * 60 * 60 * 1000));
      expect(info.state.messages).toBe(2);
    } finally {
      await defaults.close();
    }
  });

  it('refuses replicas a single server cannot hold, naming the stream', async () => {
    const overReplicated = await createNatsBus({
      url,
      namespace,
      logger: pino({ level: 'silent' }),
      streamLimits: { replicas: 3, maxAgeMs: 0, maxBytes: 0 },
    });
    try {
      await expect(overReplicated.publish(testEvent())).rejects.toThrow(streamName(namespace, 'budgets'));
    } finally {
      await overReplicated.close();
    }
  });

  it('creates durable pull consumers with explicit acks, and updates them when options change', async () => {
    const handler = async () => {};
    const first = await bus.consume({
      durable: 'violations-projects',
      types: ['budgets.project.deleted'],
      handler,
      maxDeliver: 5,
      ackWaitMs: 10_000,
    });
    const stream = streamName(namespace, 'budgets');
    const name = consumerName(namespace, 'violations-projects');
    expect((await jsm.consumers.info(stream, name)).config).toMatchObject({
      durable_name: name,
      ack_policy: 'explicit',
      deliver_policy: 'all',
      // Its one type, so the broker counts only those as pending.
      filter_subject: `${namespace}.budgets.project.deleted`,
      // The broker's bound rides out outages; maxDeliver is applied by the consumer (delivery.ts).
      max_deliver: outageMaxDeliver,
      ack_wait: nanos(10_000),
    });
    expect((await jsm.consumers.info(stream, name)).config.deliver_subject).toBeUndefined();
    await first.stop();

    const second = await bus.consume({
      durable: 'violations-projects',
      types: ['budgets.project.deleted'],
      handler,
      maxDeliver: 7,
    });
    expect((await jsm.consumers.info(stream, name)).config).toMatchObject({
      max_deliver: outageMaxDeliver,
      ack_wait: nanos(30_000),
    });
    await second.stop();
  });

  it("filters a durable on the service's every subject when it takes several of its types, and narrows it again", async () => {
    const handler = async () => {};
    const stream = streamName(namespace, 'budgets');
    const name = consumerName(namespace, 'budget-events');
    const filter = async () => (await jsm.consumers.info(stream, name)).config.filter_subject;
    const several = await bus.consume({
      durable: 'budget-events',
      types: ['budgets.budget.breached', 'budgets.project.*', 'scanner.scan.completed'],
      handler,
    });
    expect(await filter()).toBe(`${namespace}.budgets.>`);
    await several.stop();
    const one = await bus.consume({ durable: 'budget-events', types: ['budgets.budget.*'], handler });
    expect(await filter()).toBe(`${namespace}.budgets.budget.*`); // an existing consumer, updated in place
    await one.stop();
  });

  it('delivers only the types of a narrowed durable and leaves the rest out of its pending count', async () => {
    const seen: string[] = [];
    const consumer = await bus.consume({
      durable: 'scan-requests',
      types: ['scanner.scan.requested'],
      handler: async (event) => {
        seen.push(event.type);
      },
    });
    await bus.publish(testEvent({ type: 'scanner.scan.completed', source: 'scanner' }));
    await bus.publish(testEvent({ type: 'scanner.scan.requested', source: 'scanner' }));
    await eventually(() => expect(seen).toEqual(['scanner.scan.requested']));
    // Once the ack is in: nothing pending, and the completed event was never sent to it.
    await eventually(async () => {
      const info = await jsm.consumers.info(
        streamName(namespace, 'scanner'),
        consumerName(namespace, 'scan-requests'),
      );
      expect(info.num_pending + info.num_ack_pending).toBe(0);
      expect(info.delivered.consumer_seq).toBe(1);
      return info;
    });
    await consumer.stop();
  });

  it('keeps a message from redelivery while its handler reports working(), past the ack wait', async () => {
    const deliveries: number[] = [];
    let finished = false;
    const consumer = await bus.consume({
      durable: 'long_worker',
      types: ['budgets.>'],
      ackWaitMs: 600,
      concurrency: 2,
      handler: async (_, info) => {
        deliveries.push(info.deliveryCount);
        // Four ack waits long, reporting four times per ack wait: a report running late on a loaded machine
        // still comes well inside the ack wait.
        for (let i = 0; i < 16; i++) {
          await new Promise((resolve) => setTimeout(resolve, 150));
          info.working();
        }
        finished = true;
      },
    });
    await bus.publish(testEvent());
    await eventually(() => expect(finished).toBe(true), 15_000);
    await new Promise((resolve) => setTimeout(resolve, 700)); // past an ack wait after the last report
    expect(deliveries).toEqual([1]);
    await consumer.stop();
  });
});

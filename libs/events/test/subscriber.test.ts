import { create } from '@bufbuild/protobuf';
import {
  AckPolicy,
  jetstream,
  jetstreamManager,
  type JetStreamManager,
  type JsMsg,
} from '@nats-io/jetstream';
import { connect, headers as natsHeaders, type NatsConnection } from '@nats-io/transport-node';
import { context, propagation, SpanKind, trace } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { W3CTraceContextPropagator } from '@opentelemetry/core';
import {
  BasicTracerProvider,
  InMemorySpanExporter,
  SimpleSpanProcessor,
} from '@opentelemetry/sdk-trace-base';
import { afterEach, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest';
import { createNatsBus, encodePayload, type Bus, type CloudEvent } from '@costgov/bus';
import { events } from '@costgov/contracts';
import { createLogger } from '@costgov/log';
import { deleteStreams, eventually, uniqueName } from '@costgov/testing';
import { connectEvents, memoryInbox, withInbox, type EventsClient } from '../src';

const url = process.env.NATS_URL;
let counter = 0;

/** budgets.budget.breached as budgets' relay publishes it. */
function breached(overrides: Partial<CloudEvent> = {}): CloudEvent {
  counter++;
  const budgetId = `bdg_${counter}`;
  return {
    specversion: '1.0',
    id: `evt_${Date.now()}_${counter}`,
    source: 'budgets',
    type: 'budgets.budget.breached',
    subject: budgetId,
    time: new Date().toISOString(),
    datacontenttype: 'application/json',
    data: encodePayload(
      events.BudgetThresholdCrossedSchema,
      create(events.BudgetThresholdCrossedSchema, {
        budgetId,
        teamId: 'team_1',
        threshold: 100,
        currentSpend: 120.5,
        amount: 100,
        currency: 'EUR',
      }),
    ),
    ...overrides,
  };
}

// The platform's side is libs/bus, as the services use it: what it publishes, libs/events reads.
describe.skipIf(!url)('subscribe on NATS JetStream', () => {
  const servers = url ?? '';
  const logger = createLogger('test', 'silent');
  let namespace: string;
  let bus: Bus;
  let client: EventsClient;
  let nc: NatsConnection;
  let jsm: JetStreamManager;
  let logged: string[];
  let spans: InMemorySpanExporter;

  beforeAll(() => {
    spans = new InMemorySpanExporter();
    context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
    propagation.setGlobalPropagator(new W3CTraceContextPropagator());
    trace.setGlobalTracerProvider(
      new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(spans)] }),
    );
  });

  beforeEach(async () => {
    namespace = uniqueName('t');
    logged = [];
    bus = await createNatsBus({ url: servers, namespace, logger });
    client = await connectEvents({
      servers,
      namespace,
      logger: { warn: (_f, msg) => logged.push(msg), error: (_f, msg) => logged.push(msg) },
    });
    nc = await connect({ servers });
    jsm = await jetstreamManager(nc);
  });

  afterEach(async () => {
    await client.close();
    await bus.close();
    await nc.close();
    await deleteStreams(servers, namespace);
  });

  const consumerState = async (durable: string) => {
    const info = await jsm.consumers.info(`${namespace}_BUDGETS`.toUpperCase(), durable);
    return { acked: info.ack_floor.stream_seq, pending: info.num_ack_pending + info.num_pending };
  };

  it('hands the handler the decoded payload and attributes, in a CONSUMER span continuing the event’s trace', async () => {
    const traceId = '0af7651916cd43dd8448eb211c80319c';
    const event = breached({ traceparent: `00-${traceId}-b7ad6b7169203331-01` });
    const seen: unknown[] = [];
    await client.subscribe('budgets.budget.breached', {
      durable: 'billing',
      handler: async (data, received) => {
        seen.push({ data, received, span: trace.getActiveSpan()?.spanContext().traceId });
      },
    });
    await bus.publish(event);
    await eventually(() => (seen.length === 1 ? true : undefined));
    expect(seen[0]).toMatchObject({
      data: {
        $typeName: 'costgov.events.v1.BudgetThresholdCrossed',
        budgetId: event.subject,
        currentSpend: 120.5,
      },
      received: {
        attributes: {
          id: event.id,
          type: 'budgets.budget.breached',
          source: 'budgets',
          subject: event.subject,
        },
        durable: 'billing',
        deliveryCount: 1,
        stream: `${namespace}_BUDGETS`.toUpperCase(),
        subject: `${namespace}.budgets.budget.breached`,
      },
      span: traceId,
    });
    const consumed = spans.getFinishedSpans().find((s) => s.name === 'consume budgets.budget.breached');
    expect(consumed?.kind).toBe(SpanKind.CONSUMER);
    expect(consumed?.spanContext().traceId).toBe(traceId);
    // The parent is the publish span libs/bus wrote into the event's traceparent.
    expect(consumed?.parentSpanContext?.spanId).toBe(
      spans
        .getFinishedSpans()
        .find((s) => s.name === 'publish budgets.budget.breached')
        ?.spanContext().spanId,
    );
    await eventually(async () => ((await consumerState('billing')).pending === 0 ? true : undefined));
  });

  it('acks once the handler resolves, and naks a rejection so that the event comes back', async () => {
    const deliveries: number[] = [];
    await client.subscribe('budgets.budget.breached', {
      durable: 'flaky',
      backoffMs: 10,
      handler: async (_data, received) => {
        deliveries.push(received.deliveryCount);
        if (received.deliveryCount === 1) throw new Error('database down');
      },
    });
    await bus.publish(breached());
    await eventually(async () =>
      (await consumerState('flaky')).pending === 0 && deliveries.length === 2 ? true : undefined,
    );
    expect(deliveries).toEqual([1, 2]);
    expect(logged).toContain('event handler failed; redelivering after a backoff');
  });

  it('terminates an undecodable message without calling the handler, and goes on with the next', async () => {
    const handled: string[] = [];
    await client.subscribe('budgets.budget.breached', {
      durable: 'strict',
      backoffMs: 10,
      handler: async (data) => void handled.push(data.budgetId),
    });
    const h = natsHeaders();
    for (const [key, value] of Object.entries({
      'ce-specversion': '1.0',
      'ce-id': 'evt_garbage',
      'ce-source': 'budgets',
      'ce-type': 'budgets.budget.breached',
      'ce-time': new Date().toISOString(),
    }))
      h.set(key, value);
    const js = (await import('@nats-io/jetstream')).jetstream(nc);
    await js.publish(`${namespace}.budgets.budget.breached`, '{"threshold": "lots"}', { headers: h });
    const good = breached();
    await bus.publish(good);
    await eventually(async () =>
      (await consumerState('strict')).pending === 0 && handled.length === 1 ? true : undefined,
    );
    expect(handled).toEqual([good.subject]);
    expect(logged).toContain('undecodable event terminated');
    const info = await jsm.consumers.info(`${namespace}_BUDGETS`.toUpperCase(), 'strict');
    expect(info.num_redelivered).toBe(0);
  });

  it('applies an event re-sent under another message id once, with withInbox', async () => {
    const effects: string[] = [];
    let deliveries = 0;
    await client.subscribe('budgets.budget.breached', {
      durable: 'deduped',
      handler: withInbox(memoryInbox(), async (_data, received) => {
        effects.push(received.attributes.id);
      }),
    });
    const event = breached();
    await bus.publish(event);
    await bus.publish(event, { dedupeId: `${event.id}-replay` });
    await eventually(async () => {
      const info = await jsm.consumers.info(`${namespace}_BUDGETS`.toUpperCase(), 'deduped');
      deliveries = info.delivered.consumer_seq;
      return deliveries === 2 && info.num_ack_pending === 0 ? true : undefined;
    });
    expect(effects).toEqual([event.id]);
  });

  it('survives a settlement that throws on a closed connection: logged, nothing rejects unhandled', async () => {
    // nats.js throws ClosedConnectionError from a publish on a closed connection; @nats-io 3.4's JsMsg
    // buffers its nak and term instead, so the test makes them throw as the connection's publish does.
    await bus.publish(breached()); // creates the stream
    const stream = `${namespace}_BUDGETS`.toUpperCase();
    await jsm.consumers.add(stream, { durable_name: 'probe', ack_policy: AckPolicy.Explicit });
    const probe = await (await jetstream(nc).consumers.get(stream, 'probe')).next();
    const jsMsg = Object.getPrototypeOf(probe) as JsMsg;
    const own = await connect({ servers });
    const closed = () => {
      if (own.isClosed()) throw new Error('closed connection');
    };
    vi.spyOn(jsMsg, 'nak').mockImplementation(closed);
    vi.spyOn(jsMsg, 'term').mockImplementation(closed);
    const unhandled: unknown[] = [];
    const onUnhandled = (reason: unknown) => unhandled.push(reason);
    process.on('unhandledRejection', onUnhandled);
    const closing = await connectEvents({
      connection: own,
      namespace,
      logger: { warn: (_f, msg) => logged.push(msg), error: (_f, msg) => logged.push(msg) },
    });
    try {
      let started!: () => void;
      const running = new Promise<void>((resolve) => (started = resolve));
      let release!: () => void;
      const released = new Promise<void>((resolve) => (release = resolve));
      await closing.subscribe('budgets.budget.breached', {
        durable: 'cut_off',
        handler: async () => {
          started();
          await released;
          throw new Error('database down'); // a nak, on a connection that is closed by now
        },
      });
      await running;
      await own.close();
      release();
      await eventually(() => (logged.includes('settlement not confirmed') ? true : undefined));
      await new Promise((resolve) => setImmediate(resolve)); // an unhandled rejection is reported by now
      expect(unhandled).toEqual([]);
    } finally {
      process.off('unhandledRejection', onUnhandled);
      vi.restoreAllMocks();
      await closing.close();
    }
  });

  it('recreates its consumer when it is deleted, and goes on handling events', async () => {
    const handled: string[] = [];
    await client.subscribe('budgets.budget.breached', {
      durable: 'phoenix',
      handler: async (_data, received) => void handled.push(received.attributes.id),
    });
    const first = breached();
    await bus.publish(first);
    await eventually(() => (handled.includes(first.id) ? true : undefined));
    const stream = `${namespace}_BUDGETS`.toUpperCase();
    // NATS 2.9 may refuse a delete while the consumer writes its state ("directory not empty"): ask again.
    await eventually(() =>
      jsm.consumers.delete(stream, 'phoenix').then(
        () => true,
        (error: unknown) => {
          if (!String(error).includes('directory not empty')) throw error;
          return undefined;
        },
      ),
    );
    // The subscription notices on its next pull, or after two missed heartbeats (10 s).
    await eventually(() => (logged.includes('consumer missing; recreating') ? true : undefined), 30_000);
    await eventually(() =>
      jsm.consumers.info(stream, 'phoenix').then(
        () => true,
        () => undefined,
      ),
    );
    const second = breached();
    await bus.publish(second);
    await eventually(() => (handled.includes(second.id) ? true : undefined), 30_000);
  }, 60_000);

  it('creates a missing stream with the settings the producer gives it', async () => {
    await client.subscribe('costs.data.ingested', { durable: 'early', handler: async () => undefined });
    const other = uniqueName('t');
    const producer = await createNatsBus({ url: servers, namespace: other, logger });
    try {
      await producer.publish({ ...breached(), type: 'costs.data.ingested', source: 'costs', data: {} });
      const settings = async (ns: string) => {
        const { config } = await jsm.streams.info(`${ns}_COSTS`.toUpperCase());
        const { name, subjects, ...rest } = config;
        return {
          name: name.replace(ns.toUpperCase(), 'NS'),
          subjects: subjects?.map((s) => s.replace(ns, 'ns')),
          ...rest,
        };
      };
      expect(await settings(namespace)).toEqual(await settings(other));
    } finally {
      await producer.close();
      await deleteStreams(servers, other);
    }
  });
});

import { jetstream, type ConsumerMessages, type JsMsg } from '@nats-io/jetstream';
import { headers as natsHeaders } from '@nats-io/transport-node';
import type { Logger } from '@costgov/log';
import {
  resolveConsumeOptions,
  type Bus,
  type BusObserver,
  type Consumer,
  type ConsumerLag,
  type ResolvedConsumeOptions,
} from './bus';
import {
  assertEventType,
  assertNamespace,
  defaultNamespace,
  serviceOf,
  toWire,
  type WireMessage,
} from './cloudevent';
import { deliver } from './delivery';
import { createGate } from './gate';
import {
  consumerName,
  defaultStreamLimits,
  ensureConsumer,
  ensureStream,
  filterOf,
  type StreamLimits,
} from './jetstream-setup';
import { connectNats } from './nats-connect';
import { withPublishSpan } from './tracing';

export interface NatsBusOptions {
  /** One server or a comma-separated list. */
  url: string;
  namespace?: string;
  logger: Logger;
  /** Connection name shown in the server's monitoring. */
  name?: string;
  /** How long the first connection may take before createNatsBus rejects. Default 30 s. */
  connectTimeoutMs?: number;
  observer?: BusObserver;
  /** Replicas and retention of the streams; applied to existing ones when they differ. */
  streamLimits?: StreamLimits;
}

/** How long one pull request waits on the server, and the pause between two checks of a lost consumer. */
const pullExpiresMs = 3_000;
/**
 * Heartbeats of a pull: when the server holding it dies (a cluster member), two missed heartbeats (2 s)
 * make the client check the consumer and pull again, from its new leader once elected.
 */
const pullHeartbeatMs = 1_000;
/**
 * JetStream API calls of the consume loop (the consumer check after missed heartbeats): a check that
 * meets a consumer without a leader fails after this long and is tried again a pull's expiry later.
 */
const consumerApiTimeoutMs = 2_000;
/** How long a publish waits for the stream leader's ack before it fails (and the outbox relay retries). */
const publishTimeoutMs = 2_000;

interface ConsumeRun {
  gate: ReturnType<typeof createGate>;
  handling: Set<Promise<void>>;
  stopping: boolean;
}

/** The bus on NATS JetStream: durable pull consumers with explicit acks, one stream per producing service. */
export async function createNatsBus({
  url,
  namespace = defaultNamespace,
  logger,
  name,
  connectTimeoutMs = 30_000,
  observer,
  streamLimits = defaultStreamLimits,
}: NatsBusOptions): Promise<Bus> {
  assertNamespace(namespace);
  const log = logger.child({ component: 'bus', bus: 'nats' });
  const { nc, jsm } = await connectNats({ url, name, logger: log, connectTimeoutMs });
  const js = jetstream(nc);
  const jsConsume = jetstream(nc, { timeout: consumerApiTimeoutMs });

  const streams = new Map<string, Promise<string>>();
  const ensureServiceStream = (service: string): Promise<string> => {
    let stream = streams.get(service);
    if (!stream) {
      stream = ensureStream(jsm, namespace, service, streamLimits).then(({ name, changed }) => {
        if (changed.length > 0) log.info({ stream: name, changed }, 'stream settings updated');
        return name;
      });
      streams.set(service, stream);
      // Forget failures so the next call tries again.
      stream.catch(() => streams.delete(service));
    }
    return stream;
  };
  /**
   * After a failed publish: makes sure the stream exists (it may have been deleted under us) in the
   * background, one check at a time. A publish does not wait for it: while a cluster elects a stream's
   * new leader the check would wait out its timeout, and the retries of the outbox would wait behind it.
   */
  const rechecking = new Set<string>();
  const recheckStream = (service: string) => {
    if (rechecking.has(service)) return;
    rechecking.add(service);
    ensureStream(jsm, namespace, service, streamLimits)
      .then(({ name }) => void streams.set(service, Promise.resolve(name)))
      .catch((error: unknown) =>
        log.debug({ err: error, service }, 'stream check after a failed publish failed'),
      )
      .finally(() => rechecking.delete(service));
  };
  const consumers = new Set<Consumer>();
  /** Durables this bus consumes, by `stream/consumer`, for consumerLag(). */
  const subscribed = new Map<string, { stream: string; consumer: string; count: number }>();

  /** One pull subscription on the stream of `service`; the gate bounds handlers across all of them. */
  async function subscribe(service: string, options: ResolvedConsumeOptions, run: ConsumeRun) {
    const durable = consumerName(namespace, options.durable);
    const setUp = async (): Promise<string> => {
      const stream = await ensureServiceStream(service);
      await ensureConsumer(jsm, stream, durable, filterOf(namespace, service, options.types), options);
      return stream;
    };
    const stream = await setUp();
    // Each pull lasts pullExpiresMs with a heartbeat every pullHeartbeatMs: when the server holding the
    // pull dies (a cluster member), two missed heartbeats make the client check the consumer and pull
    // again from its new leader within seconds, where nats.js's default (30 s pulls, heartbeats every
    // 15 s, 30 s API timeout backoff) would leave it idle up to a minute.
    const messages = await (
      await jsConsume.consumers.get(stream, durable)
    ).consume({ max_messages: options.concurrency, expires: pullExpiresMs, idle_heartbeat: pullHeartbeatMs });
    const key = `${stream}/${durable}`;
    const entry = subscribed.get(key) ?? { stream, consumer: durable, count: 0 };
    entry.count++;
    subscribed.set(key, entry);
    void messages.closed().finally(() => {
      if (--entry.count === 0 && subscribed.get(key) === entry) subscribed.delete(key);
    });
    const recreate = () => {
      streams.delete(service); // the stream may be gone too
      return setUp();
    };
    void watchConsumer(messages, recreate, log.child({ durable: options.durable, stream }));
    const loop = (async () => {
      for await (const msg of messages) {
        await run.gate.acquire();
        if (run.stopping) {
          run.gate.release();
          msg.nak(); // pulled before stop: hand it to another consumer now rather than after the ack wait
          continue;
        }
        const task = handle(msg, options).finally(run.gate.release);
        run.handling.add(task);
        void task.finally(() => run.handling.delete(task));
      }
    })();
    return { messages, loop };
  }

  async function handle(msg: JsMsg, options: ResolvedConsumeOptions): Promise<void> {
    const headers: Record<string, string> = {};
    for (const key of msg.headers?.keys() ?? []) headers[key] = msg.headers?.get(key) ?? '';
    const message: WireMessage = { subject: msg.subject, headers, body: msg.string() };
    const settlement = await deliver({
      message,
      deliveryCount: msg.info.deliveryCount,
      options,
      logger: log,
      system: 'nats',
      consumer: consumerName(namespace, options.durable),
      working: () => msg.working(),
      observer,
    });
    try {
      if (settlement.kind === 'nak') return msg.nak(settlement.delayMs);
      // Without a reason: NATS 2.9 does not parse `+TERM <reason>` and redelivers (the reason is logged).
      if (settlement.kind === 'term') return msg.term();
      await msg.ackAck();
    } catch (error) {
      // A lost connection: the message comes back after the ack wait (the inbox skips a done effect).
      log.warn(
        { err: error, durable: options.durable, nats_subject: msg.subject },
        'settlement not confirmed',
      );
    }
  }

  return {
    async publish(event, options) {
      assertEventType(event.type);
      const service = serviceOf(event.type);
      await ensureServiceStream(service);
      const subject = `${namespace}.${event.type}`;
      await withPublishSpan(event, { system: 'nats', subject }, async (sent) => {
        const wire = toWire(sent, namespace);
        const headers = natsHeaders();
        for (const [key, value] of Object.entries(wire.headers)) headers.set(key, value);
        try {
          await js.publish(wire.subject, wire.body, {
            msgID: options?.dedupeId ?? event.id,
            headers,
            timeout: publishTimeoutMs,
          });
        } catch (error) {
          recheckStream(service);
          throw error;
        }
      });
    },

    async consume(consumeOptions) {
      const options = resolveConsumeOptions(consumeOptions);
      const run: ConsumeRun = { gate: createGate(options.concurrency), handling: new Set(), stopping: false };
      const services = [...new Set(options.types.map(serviceOf))];
      const outcomes = await Promise.allSettled(services.map((service) => subscribe(service, options, run)));
      const subscriptions = outcomes.flatMap((outcome) =>
        outcome.status === 'fulfilled' ? [outcome.value] : [],
      );
      const stop = async () => {
        run.stopping = true;
        for (const { messages } of subscriptions) messages.stop();
        await Promise.all(subscriptions.map(({ loop }) => loop));
        await Promise.allSettled([...run.handling]);
      };
      const failed = outcomes.find((outcome) => outcome.status === 'rejected');
      if (failed) {
        await stop(); // all services or none
        throw failed.reason;
      }
      const consumer: Consumer = {
        async stop() {
          consumers.delete(consumer);
          await stop();
        },
      };
      consumers.add(consumer);
      return consumer;
    },

    async consumerLag() {
      // Named as the broker names the consumer (namespace prefix included), one per producing stream.
      const reads = await Promise.allSettled(
        [...subscribed.values()].map(async ({ stream, consumer }) => ({
          durable: consumer,
          pending: (await jsm.consumers.info(stream, consumer)).num_pending,
        })),
      );
      const lag = new Map<string, ConsumerLag>();
      for (const read of reads) {
        if (read.status !== 'fulfilled') continue;
        const { durable, pending } = read.value;
        const total = lag.get(durable) ?? { system: 'nats', durable, pending: 0 };
        total.pending += pending;
        lag.set(durable, total);
      }
      return [...lag.values()];
    },

    async close() {
      await Promise.all([...consumers].map((consumer) => consumer.stop()));
      if (!nc.isClosed()) await nc.drain();
    },
  };
}

/** Logs what needs an operator, and recreates a consumer (or its stream) deleted under us. */
async function watchConsumer(
  messages: ConsumerMessages,
  setUp: () => Promise<unknown>,
  log: Logger,
): Promise<void> {
  let recreating = false;
  for await (const status of messages.status()) {
    if (
      status.type === 'consumer_deleted' ||
      status.type === 'consumer_not_found' ||
      status.type === 'stream_not_found'
    ) {
      log.warn({ status: status.type }, 'consumer missing; recreating');
      if (recreating) continue;
      recreating = true;
      setUp()
        .catch((error: unknown) => log.error({ err: error }, 'cannot recreate consumer'))
        .finally(() => (recreating = false));
    } else if (status.type === 'heartbeats_missed') {
      log.warn({ missed: status.count }, 'consumer heartbeats missed');
    }
  }
}

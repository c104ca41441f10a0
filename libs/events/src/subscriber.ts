import {
  AckPolicy,
  DeliverPolicy,
  DiscardPolicy,
  jetstream,
  jetstreamManager,
  JetStreamApiError,
  RetentionPolicy,
  StorageType,
  type ConsumerMessages,
  type JetStreamManager,
  type JsMsg,
} from '@nats-io/jetstream';
import { connect, nanos, type NatsConnection } from '@nats-io/transport-node';
import { isEventType, type EventType, type PayloadOf } from './catalogue';
import { decodeEvent, type CloudEventAttributes } from './decode';
import { assertNamespace, defaultNamespace, streamOf, streamSubjectsOf, subjectOf } from './subjects';
import { withConsumeSpan } from './tracing';

/** What a handler gets besides the payload. */
export interface ReceivedEvent<T extends EventType = EventType> {
  attributes: CloudEventAttributes<T>;
  /** The durable consumer that received it (the inbox key), its stream and the message's subject. */
  durable: string;
  stream: string;
  subject: string;
  /** 1 on the first delivery, 2 on the first redelivery, ... */
  deliveryCount: number;
  /** Restarts the ack wait: long handlers call it so the message is not delivered elsewhere meanwhile. */
  working(): void;
}

/** Resolves: the message is acked. Rejects: it is redelivered after a backoff. */
export type EventHandler<T extends EventType> = (
  data: PayloadOf<T>,
  event: ReceivedEvent<T>,
) => Promise<void>;

export interface SubscribeOptions<T extends EventType> {
  /**
   * The durable consumer's name (letters, digits, `_`, `-`): replicas that share it split the work, and
   * it keeps its place across restarts. Use one per effect and event type.
   */
  durable: string;
  handler: EventHandler<T>;
  /** Messages handled at once. Default 1. */
  concurrency?: number;
  /** Deliveries before a failing message is given up on (terminated, logged at error). Default 10. */
  maxDeliver?: number;
  /** Time a handler has before the message is delivered again. Default 30 s. */
  ackWaitMs?: number;
  /** Delay before the first redelivery after a failure, doubled per attempt up to 60 s. Default 1 s. */
  backoffMs?: number;
  /** Where a new durable starts: every retained event (default) or only those published from now on. */
  startFrom?: 'all' | 'new';
}

export interface Subscription {
  /** Stops taking messages and waits for the handlers running now. */
  stop(): Promise<void>;
}

/** A pino-compatible logger; the default writes JSON lines to stderr. */
export interface EventsLogger {
  warn(fields: object, message: string): void;
  error(fields: object, message: string): void;
}

export interface EventsOptions {
  /** NATS server(s): a URL, a comma-separated list or an array. Ignored when `connection` is given. */
  servers?: string | string[];
  /** An open connection to use (and leave open on close) instead. */
  connection?: NatsConnection;
  /** The deployment's subject namespace (EVENT_NAMESPACE); default `costgov`. */
  namespace?: string;
  /** Connection name shown in the server's monitoring. */
  name?: string;
  logger?: EventsLogger;
}

export interface EventsClient {
  readonly namespace: string;
  /** Creates or binds the durable pull consumer of `type` on its stream and starts handling messages. */
  subscribe<T extends EventType>(type: T, options: SubscribeOptions<T>): Promise<Subscription>;
  /** Stops every subscription, then closes the connection if this client opened it. */
  close(): Promise<void>;
}

const maxBackoffMs = 60_000;
/**
 * A pull lasts 3 s with a heartbeat every second, and the consume loop's JetStream API calls time out
 * after 2 s (as libs/bus does for the platform's own consumers): when the cluster member holding a pull
 * dies, or the consumer is deleted under the subscription, two missed heartbeats (2 s) make the client
 * check the consumer and pull again, from its new leader once elected, where nats.js's defaults (30 s
 * pulls, heartbeats every 15 s, 30 s API timeouts) leave it idle up to a minute.
 */
const pullExpiresMs = 3_000;
const pullHeartbeatMs = 1_000;
const consumerApiTimeoutMs = 2_000;
const durablePattern = /^[A-Za-z0-9_-]+$/;

const stderrLogger: EventsLogger = {
  warn: (fields, msg) => console.error(JSON.stringify({ level: 'warn', msg, ...fields })),
  error: (fields, msg) => console.error(JSON.stringify({ level: 'error', msg, ...fields })),
};

const errorFields = (error: unknown) =>
  error instanceof Error ? { err: { type: error.name, message: error.message } } : { err: String(error) };

/** Connects to NATS JetStream for typed, durable subscriptions to the platform's events. */
export async function connectEvents(options: EventsOptions): Promise<EventsClient> {
  const namespace = options.namespace ?? defaultNamespace;
  assertNamespace(namespace);
  const log = options.logger ?? stderrLogger;
  const servers = typeof options.servers === 'string' ? options.servers.split(',') : options.servers;
  if (!options.connection && !servers?.length)
    throw new Error('connectEvents needs `servers` or `connection`.');
  const nc = options.connection ?? (await connect({ servers, name: options.name, maxReconnectAttempts: -1 }));
  const jsm = await jetstreamManager(nc);
  const js = jetstream(nc, { timeout: consumerApiTimeoutMs });
  const subscriptions = new Set<Subscription>();

  async function subscribe<T extends EventType>(type: T, subscribeOptions: SubscribeOptions<T>) {
    if (!isEventType(type)) throw new Error(`Unknown event type '${type}': not in the event catalogue.`);
    const resolved = resolveOptions(subscribeOptions);
    const { durable, handler } = resolved;
    const stream = streamOf(namespace, type);
    const subject = subjectOf(namespace, type);
    await ensureStream(jsm, namespace, type);
    await ensureConsumer(jsm, stream, subject, resolved);
    const messages = await (
      await js.consumers.get(stream, durable)
    ).consume({
      max_messages: resolved.concurrency,
      expires: pullExpiresMs,
      idle_heartbeat: pullHeartbeatMs,
    });
    // The iterator keeps asking while the consumer or its stream is missing: put them back and it resumes.
    void watchConsumer(
      messages,
      async () => {
        await ensureStream(jsm, namespace, type);
        await ensureConsumer(jsm, stream, subject, resolved);
      },
      log,
      { durable, stream },
    );

    let stopping = false;
    const running = new Set<Promise<void>>();
    const slotFreed: Array<() => void> = [];
    /**
     * Term or nak: they publish at once, and throw when the connection is closed or draining. Nothing is
     * lost: the server delivers the message again after the ack wait (an inbox skips a done effect).
     */
    const settle = (settlement: () => void, msg: JsMsg) => {
      try {
        settlement();
      } catch (error) {
        log.warn({ durable, nats_subject: msg.subject, ...errorFields(error) }, 'settlement not confirmed');
      }
    };
    const handle = async (msg: JsMsg): Promise<void> => {
      let decoded: ReturnType<typeof decodeEvent<T>>;
      try {
        const headers = (msg.headers?.keys() ?? []).map((key): [string, string] => [
          key,
          msg.headers?.get(key) ?? '',
        ]);
        decoded = decodeEvent(type, headers, msg.string());
      } catch (error) {
        // Redelivering it would fail the same way: take it out of the stream's way, loudly.
        log.error(
          { durable, nats_subject: msg.subject, ...errorFields(error) },
          'undecodable event terminated',
        );
        settle(() => msg.term(), msg); // no reason: servers before 2.10 ignore a `+TERM <reason>`
        return;
      }
      const deliveryCount = msg.info.deliveryCount;
      const event: ReceivedEvent<T> = {
        attributes: decoded.attributes,
        durable,
        stream,
        subject: msg.subject,
        deliveryCount,
        working: () => msg.working(),
      };
      try {
        await withConsumeSpan(decoded.attributes, { subject, durable, deliveryCount }, () =>
          handler(decoded.data, event),
        );
      } catch (error) {
        const fields = {
          durable,
          event_id: decoded.attributes.id,
          event_type: type,
          deliveryCount,
          ...errorFields(error),
        };
        if (deliveryCount >= resolved.maxDeliver) {
          log.error(fields, 'event handler failed on its last delivery; event given up');
          settle(() => msg.term(), msg);
        } else {
          log.warn(fields, 'event handler failed; redelivering after a backoff');
          settle(() => msg.nak(Math.min(resolved.backoffMs * 2 ** (deliveryCount - 1), maxBackoffMs)), msg);
        }
        return;
      }
      try {
        await msg.ackAck();
      } catch (error) {
        // The message comes back after the ack wait; an inbox makes the second run a no-op.
        log.warn({ durable, event_id: decoded.attributes.id, ...errorFields(error) }, 'ack not confirmed');
      }
    };

    const loop = (async () => {
      for await (const msg of messages) {
        while (running.size >= resolved.concurrency) await new Promise<void>((r) => slotFreed.push(r));
        if (stopping) {
          settle(() => msg.nak(), msg); // pulled before stop: hand it to another replica now, not after the ack wait
          continue;
        }
        const task = handle(msg)
          .catch((error: unknown) =>
            log.error({ durable, nats_subject: msg.subject, ...errorFields(error) }, 'event handling failed'),
          )
          .finally(() => {
            running.delete(task);
            slotFreed.shift()?.();
          });
        running.add(task);
      }
    })().catch((error: unknown) =>
      // The consumer's iterator failed (a closed connection): no fault may end the process.
      log.error({ durable, stream, ...errorFields(error) }, 'event subscription stopped'),
    );

    const subscription: Subscription = {
      async stop() {
        subscriptions.delete(subscription);
        stopping = true;
        await messages.close();
        await loop;
        await Promise.allSettled([...running]);
      },
    };
    subscriptions.add(subscription);
    return subscription;
  }

  return {
    namespace,
    subscribe,
    async close() {
      await Promise.all([...subscriptions].map((subscription) => subscription.stop()));
      if (!options.connection && !nc.isClosed()) await nc.drain();
    },
  };
}

/**
 * Recreates the durable consumer (and its stream) when it is deleted under a running subscription, as
 * libs/bus does for the platform's own consumers; logs missed heartbeats. Never rejects.
 */
async function watchConsumer(
  messages: ConsumerMessages,
  recreate: () => Promise<void>,
  log: EventsLogger,
  where: { durable: string; stream: string },
): Promise<void> {
  let recreating = false;
  try {
    for await (const status of messages.status()) {
      if (
        status.type === 'consumer_deleted' ||
        status.type === 'consumer_not_found' ||
        status.type === 'stream_not_found'
      ) {
        log.warn({ ...where, status: status.type }, 'consumer missing; recreating');
        if (recreating) continue;
        recreating = true;
        recreate()
          .catch((error: unknown) =>
            log.error({ ...where, ...errorFields(error) }, 'cannot recreate consumer'),
          )
          .finally(() => (recreating = false));
      } else if (status.type === 'heartbeats_missed') {
        log.warn({ ...where, missed: status.count }, 'consumer heartbeats missed');
      }
    }
  } catch (error) {
    log.warn({ ...where, ...errorFields(error) }, 'consumer status no longer watched');
  }
}

function resolveOptions<T extends EventType>(options: SubscribeOptions<T>): Required<SubscribeOptions<T>> {
  if (!durablePattern.test(options.durable)) {
    throw new Error(`Invalid durable name '${options.durable}': expected letters, digits, '_' or '-'.`);
  }
  const resolved = {
    concurrency: 1,
    maxDeliver: 10,
    ackWaitMs: 30_000,
    backoffMs: 1_000,
    startFrom: 'all' as const,
    ...options,
  };
  for (const key of ['concurrency', 'maxDeliver', 'ackWaitMs', 'backoffMs'] as const) {
    const min = key === 'backoffMs' ? 0 : 1;
    if (!Number.isInteger(resolved[key]) || resolved[key] < min) {
      throw new Error(
        `Invalid ${key} ${resolved[key]} for durable '${options.durable}': expected an integer >= ${min}.`,
      );
    }
  }
  return resolved;
}

/**
 * The producing service creates its stream when it first publishes; a consumer that starts first
 * creates it with the same configuration (documented under `x-jetstream` in the AsyncAPI document), and
 * never changes an existing one.
 */
async function ensureStream(jsm: JetStreamManager, namespace: string, type: EventType): Promise<void> {
  const name = streamOf(namespace, type);
  try {
    await jsm.streams.info(name);
    return;
  } catch (error) {
    if (!(error instanceof JetStreamApiError)) throw error;
  }
  try {
    await jsm.streams.add({
      name,
      subjects: [streamSubjectsOf(namespace, type)],
      storage: StorageType.File,
      retention: RetentionPolicy.Limits,
      discard: DiscardPolicy.Old,
      duplicate_window: nanos(120_000),
      // The producer's default retention (NATS_STREAM_MAX_AGE_HOURS); it applies its own at its start.
      max_age: nanos(7 * 24 * 60 * 60 * 1000),
    });
  } catch (error) {
    // Created meanwhile by the producer (perhaps with settings of its own): use it as it is.
    if (!(error instanceof JetStreamApiError)) throw error;
    await jsm.streams.info(name);
  }
}

/** Creates the durable pull consumer, or brings an existing one to these settings. */
async function ensureConsumer<T extends EventType>(
  jsm: JetStreamManager,
  stream: string,
  filterSubject: string,
  options: Required<SubscribeOptions<T>>,
): Promise<void> {
  const changeable = {
    ack_wait: nanos(options.ackWaitMs),
    max_deliver: options.maxDeliver,
    filter_subject: filterSubject,
  };
  try {
    await jsm.consumers.add(stream, {
      ...changeable,
      durable_name: options.durable,
      ack_policy: AckPolicy.Explicit,
      deliver_policy: options.startFrom === 'new' ? DeliverPolicy.New : DeliverPolicy.All,
    });
  } catch (error) {
    if (!(error instanceof JetStreamApiError)) throw error;
    try {
      await jsm.consumers.update(stream, options.durable, changeable);
    } catch (updateError) {
      throw new Error(
        `Cannot create or update consumer ${options.durable} on ${stream}: ${error.message}; ${(updateError as Error).message}`,
        { cause: updateError },
      );
    }
  }
}

import {
  AckPolicy,
  DeliverPolicy,
  DiscardPolicy,
  JetStreamApiError,
  RetentionPolicy,
  StorageType,
  type ConsumerConfig,
  type JetStreamManager,
  type StreamConfig,
} from '@nats-io/jetstream';
import { nanos } from '@nats-io/transport-node';
import { duplicateWindowMs, outageMaxDeliver, type ResolvedConsumeOptions } from './bus';
import { serviceOf } from './cloudevent';

/** One stream per producing service: `COSTGOV_BUDGETS` holds `costgov.budgets.>`. */
export const streamName = (namespace: string, service: string): string =>
  `${namespace}_${service}`.toUpperCase();

export const consumerName = (namespace: string, durable: string): string => `${namespace}_${durable}`;

/** Every subject of one service. */
export const serviceSubjects = (namespace: string, service: string): string => `${namespace}.${service}.>`;

/**
 * What a durable's consumer on the stream of `service` filters on. One type pattern of that service is
 * its subject (patterns are NATS subjects), so the broker sends, and counts as pending, only those
 * events: the scan workers' queue depth, which KEDA scales on, is then scan requests alone. Several
 * need the service's every subject, matched finer in code: NATS 2.9 has no `filter_subjects`, and one
 * consumer per pattern would split one durable's ordering and redelivery state over several server
 * objects. NATS 2.9 updates the filter of an existing consumer in place.
 */
export function filterOf(namespace: string, service: string, types: string[]): string {
  const own = types.filter((type) => serviceOf(type) === service);
  return own.length === 1 ? `${namespace}.${own[0]}` : serviceSubjects(namespace, service);
}

/**
 * Replicas and retention of every event stream (NATS_STREAM_* in docs/configuration.md). `maxAgeMs` 0 and
 * `maxBytes` 0 mean unlimited. The scanner's stream, which holds the scan queue, takes the same limits:
 * a size limit refuses new events (discard `new`: the outbox keeps them and retries) rather than dropping
 * unread ones, and a scan request waits for a worker at most `maxAgeMs` (docs/decisions.md).
 */
export interface StreamLimits {
  replicas: number;
  maxAgeMs: number;
  maxBytes: number;
}

export const defaultStreamLimits: StreamLimits = {
  replicas: 1,
  maxAgeMs: 7 * 24 * 3_600_000,
  maxBytes: 0,
};

/** What a stream's settings would say of these limits. */
export function limitsConfig(
  limits: StreamLimits,
): Pick<StreamConfig, 'num_replicas' | 'max_age' | 'max_bytes' | 'discard'> {
  return {
    num_replicas: limits.replicas,
    max_age: limits.maxAgeMs > 0 ? nanos(limits.maxAgeMs) : 0,
    max_bytes: limits.maxBytes > 0 ? limits.maxBytes : -1,
    discard: limits.maxBytes > 0 ? DiscardPolicy.New : DiscardPolicy.Old,
  };
}

export interface StreamChange {
  setting: string;
  from: unknown;
  to: unknown;
}

/**
 * Creates the stream, or brings an existing one to this configuration (replicas and limits included, so
 * new settings apply at the next start); safe to race. Returns the stream's name and what changed on an
 * existing stream (empty when it was created or already so).
 */
export async function ensureStream(
  jsm: JetStreamManager,
  namespace: string,
  service: string,
  limits: StreamLimits = defaultStreamLimits,
): Promise<{ name: string; changed: StreamChange[] }> {
  const name = streamName(namespace, service);
  const config: Partial<StreamConfig> & { name: string } = {
    name,
    subjects: [serviceSubjects(namespace, service)],
    storage: StorageType.File,
    retention: RetentionPolicy.Limits,
    duplicate_window: nanos(duplicateWindowMs),
    ...limitsConfig(limits),
  };
  let changed: StreamChange[] = [];
  await addOrUpdate(
    `stream ${name}`,
    () => jsm.streams.add(config),
    async () => {
      const before = (await jsm.streams.info(name)).config;
      changed = (['subjects', 'num_replicas', 'max_age', 'max_bytes', 'discard', 'duplicate_window'] as const)
        .filter((key) => JSON.stringify(before[key]) !== JSON.stringify(config[key]))
        .map((key) => ({ setting: key, from: before[key], to: config[key] }));
      return jsm.streams.update(name, config);
    },
  );
  return { name, changed };
}

/** Creates the durable pull consumer, or updates what may change on one (ack wait, max deliver). */
export async function ensureConsumer(
  jsm: JetStreamManager,
  stream: string,
  name: string,
  filterSubject: string,
  options: ResolvedConsumeOptions,
): Promise<void> {
  const changeable: Partial<ConsumerConfig> = {
    ack_wait: nanos(options.ackWaitMs),
    // The consumer gives up on failing handlers after options.maxDeliver (delivery.ts) except during
    // outages; the broker's bound only ends a message whose handler never settles.
    max_deliver: Math.max(options.maxDeliver, outageMaxDeliver),
    filter_subject: filterSubject,
  };
  await addOrUpdate(
    `consumer ${name} on ${stream}`,
    () =>
      jsm.consumers.add(stream, {
        ...changeable,
        durable_name: name,
        ack_policy: AckPolicy.Explicit,
        deliver_policy: options.startFrom === 'new' ? DeliverPolicy.New : DeliverPolicy.All,
        ...(options.expireWhenIdleMs > 0 ? { inactive_threshold: nanos(options.expireWhenIdleMs) } : {}),
      }),
    () => jsm.consumers.update(stream, name, changeable),
  );
}

// Adding with an identical configuration succeeds; a different one fails, and then an update applies it.
async function addOrUpdate(
  what: string,
  add: () => Promise<unknown>,
  update: () => Promise<unknown>,
): Promise<void> {
  try {
    await add();
  } catch (error) {
    if (!(error instanceof JetStreamApiError)) throw error;
    try {
      await update();
    } catch (updateError) {
      throw new Error(
        `Cannot create or update ${what}: ${error.message}; ${(updateError as Error).message}`,
        { cause: updateError },
      );
    }
  }
}

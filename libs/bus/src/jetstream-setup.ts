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

/** Creates the stream, or brings an existing one to this configuration; safe to race. */
export async function ensureStream(
  jsm: JetStreamManager,
  namespace: string,
  service: string,
): Promise<string> {
  const name = streamName(namespace, service);
  const config: Partial<StreamConfig> & { name: string } = {
    name,
    subjects: [serviceSubjects(namespace, service)],
    storage: StorageType.File,
    retention: RetentionPolicy.Limits,
    discard: DiscardPolicy.Old,
    duplicate_window: nanos(duplicateWindowMs),
  };
  await addOrUpdate(
    `stream ${name}`,
    () => jsm.streams.add(config),
    () => jsm.streams.update(name, config),
  );
  return name;
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

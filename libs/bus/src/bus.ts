import type { CloudEvent } from './cloudevent';
import { assertTypePattern } from './patterns';

export interface DeliveryInfo {
  /** 1 on the first delivery, 2 on the first redelivery, ... */
  deliveryCount: number;
  /**
   * Tells the broker the handler is still at work, restarting the ack wait (NATS `working`); a no-op on
   * the in-process bus. Long handlers call it periodically so the message is not delivered elsewhere.
   */
  working(): void;
}

export interface ConsumeOptions {
  /** Durable consumer name, shared by every process that should split the work. */
  durable: string;
  /** Event types, with NATS wildcards allowed after the service token: `budgets.project.deleted`, `budgets.>`. */
  types: string[];
  /**
   * Resolves: the message is acked. Rejects: it is redelivered after a backoff, or after the delay of a
   * RedeliverLater the handler throws.
   */
  handler: (event: CloudEvent, info: DeliveryInfo) => Promise<void>;
  /**
   * Failed deliveries before the message is given up on (terminated and logged at error). Default 10.
   * Failures that mean a dependency is unreachable (UnavailableError, a database that went away, a gRPC
   * UNAVAILABLE) do not give up: the message is redelivered, backing off to once a minute, until the
   * dependency is back (bounded only by the broker's `outageMaxDeliver`), so an outage loses no event.
   */
  maxDeliver?: number;
  /** Time a handler has before the message is delivered again elsewhere. Default 30 s. */
  ackWaitMs?: number;
  /** Messages handled at once by this consumer. Default 1. */
  concurrency?: number;
  /** Delay before the first redelivery after a failure, doubled per attempt up to 60 s. Default 1 s. */
  backoffMs?: number;
  /**
   * Where a new durable starts: `all` retained messages (default), or only messages published from now
   * on, for per-replica listeners such as cache invalidation.
   */
  startFrom?: 'all' | 'new';
  /** Removes the durable once nobody consumed it for this long (NATS `inactive_threshold`); 0 keeps it. */
  expireWhenIdleMs?: number;
}

export interface PublishOptions {
  /**
   * Key under which the bus drops repeats of a message (`Nats-Msg-Id`). Defaults to the event id, so
   * publishing an event twice delivers it once; another value re-sends an event on purpose (replays).
   */
  dedupeId?: string;
}

export interface Consumer {
  /** Stops taking messages and waits for the handlers running now. */
  stop(): Promise<void>;
}

/** Messages a durable consumer has not been handed yet, for the consumer lag gauge. */
export interface ConsumerLag {
  system: 'nats' | 'memory';
  /** The consumer's name at the broker (`<namespace>_<durable>`), on either bus. */
  durable: string;
  pending: number;
}

/** What a bus tells the process's metrics. */
export interface BusObserver {
  /**
   * A message is handed to a durable again (a failed handler, an expired ack wait); `durable` is its
   * consumer's name at the broker (`<namespace>_<durable>`).
   */
  redelivered?(delivery: { system: 'nats' | 'memory'; durable: string }): void;
}

/** The event bus: NATS JetStream in production, in-process for the embedded default. */
export interface Bus {
  /** Resolves once the bus has stored the event. Needs no transaction: use the outbox for that. */
  publish(event: CloudEvent, options?: PublishOptions): Promise<void>;
  consume(options: ConsumeOptions): Promise<Consumer>;
  /**
   * For each durable consumed through this bus, the messages not yet handed to it (JetStream's
   * num_pending; the in-process bus's own count). A durable whose state cannot be read is left out.
   */
  consumerLag?(): Promise<ConsumerLag[]>;
  /** Stops every consumer started on this bus, then disconnects. */
  close(): Promise<void>;
}

export type ResolvedConsumeOptions = Required<ConsumeOptions>;

/** How long redelivered messages are held back at most, and how long ids are remembered for dedupe. */
export const maxBackoffMs = 60_000;
/**
 * The broker's own bound on deliveries of one message (JetStream `max_deliver`): high enough to ride out
 * about 16 hours of a dependency's outage at one delivery a minute; `maxDeliver` ends other failures.
 */
export const outageMaxDeliver = 1_000;
export const duplicateWindowMs = 2 * 60_000;

const durablePattern = /^[A-Za-z0-9_-]+$/;

export function resolveConsumeOptions(options: ConsumeOptions): ResolvedConsumeOptions {
  if (!durablePattern.test(options.durable)) {
    throw new Error(`Invalid durable name '${options.durable}': expected letters, digits, '_' or '-'.`);
  }
  if (options.types.length === 0) throw new Error(`Durable '${options.durable}' consumes no event types.`);
  options.types.forEach(assertTypePattern);
  const resolved: ResolvedConsumeOptions = {
    ...options,
    maxDeliver: options.maxDeliver ?? 10,
    ackWaitMs: options.ackWaitMs ?? 30_000,
    concurrency: options.concurrency ?? 1,
    backoffMs: options.backoffMs ?? 1_000,
    startFrom: options.startFrom ?? 'all',
    expireWhenIdleMs: options.expireWhenIdleMs ?? 0,
  };
  for (const key of ['maxDeliver', 'ackWaitMs', 'concurrency', 'backoffMs', 'expireWhenIdleMs'] as const) {
    const min = key === 'backoffMs' || key === 'expireWhenIdleMs' ? 0 : 1;
    if (!Number.isInteger(resolved[key]) || resolved[key] < min) {
      throw new Error(
        `Invalid ${key} ${resolved[key]} for durable '${options.durable}': expected an integer >= ${min}.`,
      );
    }
  }
  return resolved;
}

export const redeliveryDelayMs = (options: ResolvedConsumeOptions, deliveryCount: number): number =>
  Math.min(options.backoffMs * 2 ** (deliveryCount - 1), maxBackoffMs);

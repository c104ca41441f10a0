import type { Logger } from '@costgov/log';
import {
  duplicateWindowMs,
  outageMaxDeliver,
  resolveConsumeOptions,
  type Bus,
  type BusObserver,
  type Consumer,
  type ConsumerLag,
  type ResolvedConsumeOptions,
} from './bus';
import { assertEventType, assertNamespace, defaultNamespace, toWire, type WireMessage } from './cloudevent';
import { deliver } from './delivery';
import { consumerName } from './jetstream-setup';
import { matchesAny } from './patterns';
import { withPublishSpan } from './tracing';

export interface MemoryBusOptions {
  logger: Logger;
  namespace?: string;
  /** Messages kept for durables created later; the oldest go first, as with a stream's max_msgs. */
  maxRetained?: number;
  observer?: BusObserver;
}

interface Stored {
  seq: number;
  type: string;
  message: WireMessage;
}

/** A message's state in one durable. */
interface Pending {
  stored: Stored;
  deliveries: number;
  availableAt: number;
  /** Token of the delivery being handled, so a late outcome after the ack wait is ignored. */
  inFlight: number | null;
}

interface Subscriber {
  options: ResolvedConsumeOptions;
  active: number;
  running: Set<Promise<void>>;
}

interface Durable {
  types: string[];
  /** Insertion order is stream order: the oldest available message goes first. */
  pending: Map<number, Pending>;
  subscribers: Subscriber[];
  turn: number;
  pumpScheduled: boolean;
  wakeUp?: NodeJS.Timeout;
}

/**
 * The in-process bus of the embedded default, with JetStream's semantics: dedupe by id within a window,
 * retained messages for late durables, competing consumers, redelivery with backoff up to maxDeliver,
 * and redelivery of a message whose handler outlives the ack wait.
 */
export function createMemoryBus({
  logger,
  namespace = defaultNamespace,
  maxRetained = 100_000,
  observer,
}: MemoryBusOptions): Bus {
  assertNamespace(namespace);
  const log = logger.child({ component: 'bus', bus: 'memory' });
  const retained: Stored[] = [];
  const seen = new Map<string, number>(); // dedupe id -> publish time, oldest first
  const durables = new Map<string, Durable>();
  const consumers = new Set<Consumer>();
  let seq = 0;
  let token = 0;
  let closed = false;

  function rememberOnce(dedupeId: string, now: number): boolean {
    for (const [id, at] of seen) {
      if (now - at < duplicateWindowMs) break;
      seen.delete(id);
    }
    if (seen.has(dedupeId)) return false;
    seen.set(dedupeId, now);
    return true;
  }

  function schedulePump(durable: Durable): void {
    if (durable.pumpScheduled) return;
    durable.pumpScheduled = true;
    // Never inside publish's or a handler's call stack, as with a real broker.
    setImmediate(() => {
      durable.pumpScheduled = false;
      pump(durable);
    });
  }

  function pump(durable: Durable): void {
    if (closed) return;
    const now = Date.now();
    let nextWakeUp = Infinity;
    for (const entry of durable.pending.values()) {
      if (entry.inFlight !== null) continue;
      if (entry.availableAt > now) {
        nextWakeUp = Math.min(nextWakeUp, entry.availableAt);
        continue;
      }
      const subscriber = nextFreeSubscriber(durable);
      if (!subscriber) return; // a settling handler pumps again
      dispatch(durable, subscriber, entry);
    }
    clearTimeout(durable.wakeUp);
    if (nextWakeUp !== Infinity) durable.wakeUp = setTimeout(() => pump(durable), nextWakeUp - now).unref();
  }

  function nextFreeSubscriber(durable: Durable): Subscriber | undefined {
    const count = durable.subscribers.length;
    for (let i = 0; i < count; i++) {
      const subscriber = durable.subscribers[(durable.turn + i) % count];
      if (subscriber && subscriber.active < subscriber.options.concurrency) {
        durable.turn = (durable.turn + i + 1) % count;
        return subscriber;
      }
    }
    return undefined;
  }

  function dispatch(durable: Durable, subscriber: Subscriber, entry: Pending): void {
    const { options } = subscriber;
    const delivery = ++token;
    entry.deliveries++;
    entry.inFlight = delivery;
    subscriber.active++;
    const ackWait = setTimeout(() => {
      if (entry.inFlight !== delivery) return;
      entry.inFlight = null;
      // As JetStream's max_deliver (jetstream-setup.ts): outage redeliveries may pass maxDeliver.
      if (entry.deliveries >= Math.max(options.maxDeliver, outageMaxDeliver)) {
        durable.pending.delete(entry.stored.seq);
        log.error(
          { durable: options.durable, delivery_count: entry.deliveries },
          'event handler outlived the ack wait on the last delivery; message dropped',
        );
      }
      schedulePump(durable);
    }, options.ackWaitMs).unref();

    const run = deliver({
      message: entry.stored.message,
      deliveryCount: entry.deliveries,
      options,
      logger: log,
      system: 'memory',
      consumer: consumerName(namespace, options.durable),
      observer,
    }).then((settlement) => {
      clearTimeout(ackWait);
      subscriber.active--;
      if (entry.inFlight === delivery) {
        entry.inFlight = null;
        if (settlement.kind === 'nak') entry.availableAt = Date.now() + settlement.delayMs;
        else durable.pending.delete(entry.stored.seq);
      }
      schedulePump(durable);
    });
    subscriber.running.add(run);
    void run.finally(() => subscriber.running.delete(run));
  }

  return {
    async publish(event, options) {
      if (closed) throw new Error('The bus is closed.');
      assertEventType(event.type);
      const now = Date.now();
      if (!rememberOnce(options?.dedupeId ?? event.id, now)) return;
      const subject = `${namespace}.${event.type}`;
      await withPublishSpan(event, { system: 'memory', subject }, async (sent) => {
        const stored: Stored = { seq: ++seq, type: sent.type, message: toWire(sent, namespace) };
        retained.push(stored);
        if (retained.length > maxRetained) retained.shift();
        for (const durable of durables.values()) {
          if (!matchesAny(durable.types, stored.type)) continue;
          durable.pending.set(stored.seq, { stored, deliveries: 0, availableAt: now, inFlight: null });
          schedulePump(durable);
        }
      });
    },

    async consume(consumeOptions) {
      if (closed) throw new Error('The bus is closed.');
      const options = resolveConsumeOptions(consumeOptions);
      let durable = durables.get(options.durable);
      if (!durable) {
        // Like DeliverPolicy.All: a new durable starts from the oldest retained message.
        durable = {
          types: options.types,
          pending: new Map(),
          subscribers: [],
          turn: 0,
          pumpScheduled: false,
        };
        for (const stored of options.startFrom === 'new' ? [] : retained) {
          if (matchesAny(options.types, stored.type)) {
            durable.pending.set(stored.seq, { stored, deliveries: 0, availableAt: 0, inFlight: null });
          }
        }
        durables.set(options.durable, durable);
      }
      durable.types = options.types;
      const subscriber: Subscriber = { options, active: 0, running: new Set() };
      durable.subscribers.push(subscriber);
      schedulePump(durable);
      const owner = durable;
      const consumer: Consumer = {
        async stop() {
          owner.subscribers = owner.subscribers.filter((s) => s !== subscriber);
          consumers.delete(consumer);
          await Promise.allSettled([...subscriber.running]);
        },
      };
      consumers.add(consumer);
      return consumer;
    },

    async consumerLag() {
      const lag: ConsumerLag[] = [];
      for (const [name, durable] of durables) {
        if (durable.subscribers.length === 0) continue;
        let pending = 0;
        for (const entry of durable.pending.values()) if (entry.inFlight === null) pending++;
        // Named as NATS would name the consumer, so a dashboard reads the same label on either bus.
        lag.push({ system: 'memory', durable: consumerName(namespace, name), pending });
      }
      return lag;
    },

    async close() {
      await Promise.all([...consumers].map((consumer) => consumer.stop()));
      closed = true;
      for (const durable of durables.values()) clearTimeout(durable.wakeUp);
    },
  };
}

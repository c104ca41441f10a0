import { isDatabaseUnavailable } from '@costgov/db';
import { UnavailableError } from '@costgov/errors';
import type { Logger } from '@costgov/log';
import {
  maxBackoffMs,
  outageMaxDeliver,
  redeliveryDelayMs,
  type BusObserver,
  type ResolvedConsumeOptions,
} from './bus';
import { fromWire, type CloudEvent, type WireMessage } from './cloudevent';
import { matchesAny } from './patterns';
import { RedeliverLater } from './redeliver';
import { messageOf } from './thrown';
import { withConsumeSpan, type SpanTarget } from './tracing';

const grpcUnavailable = 14;

/** A failure of a dependency (database, another service) rather than of the message. */
export function isOutage(error: unknown): boolean {
  if (error instanceof UnavailableError || isDatabaseUnavailable(error)) return true;
  const code = (error as { code?: unknown } | null | undefined)?.code;
  return code === grpcUnavailable || isDatabaseUnavailable((error as { cause?: unknown } | null)?.cause);
}

/** What to tell the broker about a delivered message. */
export type Settlement =
  { kind: 'ack' } | { kind: 'nak'; delayMs: number } | { kind: 'term'; reason: string };

export interface Delivery {
  message: WireMessage;
  deliveryCount: number;
  options: ResolvedConsumeOptions;
  logger: Logger;
  system: SpanTarget['system'];
  /** The consumer's name at the broker (`<namespace>_<durable>`): what metrics and spans call it. */
  consumer: string;
  /** Restarts the broker's ack wait for this message (see DeliveryInfo.working). */
  working?: () => void;
  observer?: BusObserver;
}

/**
 * The semantics both buses share: decode, skip types this consumer did not ask for, run the handler
 * in a consumer span, and turn its outcome into ack, nak with backoff, or terminate after maxDeliver.
 */
export async function deliver(delivery: Delivery): Promise<Settlement> {
  try {
    if (delivery.deliveryCount > 1) {
      delivery.observer?.redelivered?.({ system: delivery.system, durable: delivery.consumer });
    }
    return await settle(delivery);
  } catch (error) {
    // A fault outside the handler (a logger, a span) must not lose the message or stall the consumer.
    try {
      delivery.logger.error({ err: error, durable: delivery.options.durable }, 'delivering an event failed');
    } catch {
      // nothing left to tell
    }
    return { kind: 'nak', delayMs: redeliveryDelayMs(delivery.options, delivery.deliveryCount) };
  }
}

async function settle({
  message,
  deliveryCount,
  options,
  logger,
  system,
  consumer,
  working = () => undefined,
}: Delivery): Promise<Settlement> {
  const { durable } = options;
  let event: CloudEvent;
  try {
    event = fromWire(message.headers, message.body);
  } catch (error) {
    // Redelivering cannot repair a malformed message; drop it loudly.
    logger.error({ err: error, durable, nats_subject: message.subject }, 'malformed event terminated');
    return { kind: 'term', reason: messageOf(error) };
  }
  // The broker filters by producing service only (see nats.ts); finer type patterns apply here.
  if (!matchesAny(options.types, event.type)) return { kind: 'ack' };

  const fields = { durable, event_id: event.id, event_type: event.type, delivery_count: deliveryCount };
  try {
    await withConsumeSpan(event, { system, subject: message.subject, consumer, deliveryCount }, () =>
      options.handler(event, { deliveryCount, working }),
    );
    return { kind: 'ack' };
  } catch (error) {
    if (error instanceof RedeliverLater && deliveryCount < outageMaxDeliver) {
      // The handler logged why and chose when: one line per retry is the handler's.
      const delayMs = Math.min(Math.max(0, error.delayMs) || 0, maxBackoffMs);
      logger.debug(
        { ...fields, reason: error.message, retry_in_ms: delayMs },
        'redelivery asked by the handler',
      );
      return { kind: 'nak', delayMs };
    }
    if (isOutage(error) && deliveryCount < outageMaxDeliver) {
      // Not the message's fault: keep it until the dependency is back (the broker's bound is the limit).
      const delayMs = redeliveryDelayMs(options, deliveryCount);
      logger.warn({ ...fields, err: error, retry_in_ms: delayMs }, 'dependency unavailable; redelivering');
      return { kind: 'nak', delayMs };
    }
    if (deliveryCount >= options.maxDeliver || deliveryCount >= outageMaxDeliver) {
      logger.error(
        { ...fields, err: error },
        `event handler failed ${deliveryCount} times; message terminated`,
      );
      return { kind: 'term', reason: `handler failed ${deliveryCount} times: ${messageOf(error)}` };
    }
    const delayMs = redeliveryDelayMs(options, deliveryCount);
    logger.warn({ ...fields, err: error, retry_in_ms: delayMs }, 'event handler failed; redelivering');
    return { kind: 'nak', delayMs };
  }
}

import {
  context,
  propagation,
  ROOT_CONTEXT,
  SpanKind,
  SpanStatusCode,
  trace,
  type Attributes,
  type Context,
  type Span,
} from '@opentelemetry/api';
import type { CloudEvent } from './cloudevent';
import { messageOf } from './thrown';

const tracer = trace.getTracer('@costgov/bus');

type TraceHeaders = Pick<CloudEvent, 'traceparent' | 'tracestate'>;

function inject(ctx: Context): TraceHeaders {
  const carrier: Record<string, string> = {};
  propagation.inject(ctx, carrier);
  const headers: TraceHeaders = {};
  if (carrier.traceparent) headers.traceparent = carrier.traceparent;
  if (carrier.tracestate) headers.tracestate = carrier.tracestate;
  return headers;
}

function eventContext(event: CloudEvent): Context | undefined {
  if (!event.traceparent) return undefined;
  const carrier: Record<string, string> = { traceparent: event.traceparent };
  if (event.tracestate) carrier.tracestate = event.tracestate;
  return propagation.extract(ROOT_CONTEXT, carrier);
}

/** The active trace context as W3C headers: an event written now is published later, by the relay. */
export const currentTraceHeaders = (): TraceHeaders => inject(context.active());

export interface SpanTarget {
  system: 'nats' | 'memory';
  subject: string;
}

/**
 * Runs `send` in a PRODUCER span that continues the event's own trace (the change that wrote it) and
 * hands it the event carrying that span's context, so consumers' spans hang below the publish.
 */
export function withPublishSpan<T>(
  event: CloudEvent,
  target: SpanTarget,
  send: (event: CloudEvent) => Promise<T>,
): Promise<T> {
  const parent = eventContext(event) ?? context.active();
  const attributes: Attributes = {
    'messaging.system': target.system,
    'messaging.operation.type': 'send',
    'messaging.destination.name': target.subject,
    'messaging.message.id': event.id,
    'cloudevents.event_type': event.type,
  };
  return tracer.startActiveSpan(
    `publish ${event.type}`,
    { kind: SpanKind.PRODUCER, attributes },
    parent,
    (span) => settleSpan(span, () => send({ ...event, ...inject(context.active()) })),
  );
}

/** Runs a handler in a CONSUMER span whose parent is the trace context the event carries. */
export function withConsumeSpan<T>(
  event: CloudEvent,
  target: SpanTarget & { consumer: string; deliveryCount: number },
  handle: () => Promise<T>,
): Promise<T> {
  const attributes: Attributes = {
    'messaging.system': target.system,
    'messaging.operation.type': 'process',
    'messaging.destination.name': target.subject,
    'messaging.consumer.group.name': target.consumer,
    'messaging.message.id': event.id,
    'messaging.delivery_count': target.deliveryCount,
    'cloudevents.event_type': event.type,
  };
  const parent = eventContext(event) ?? ROOT_CONTEXT;
  return tracer.startActiveSpan(
    `consume ${event.type}`,
    { kind: SpanKind.CONSUMER, attributes },
    parent,
    (span) => settleSpan(span, handle),
  );
}

async function settleSpan<T>(span: Span, fn: () => Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch (error) {
    // A handler may throw anything; the span must not replace it with a TypeError of its own.
    span.recordException(error instanceof Error ? error : messageOf(error));
    span.setStatus({ code: SpanStatusCode.ERROR, message: messageOf(error) });
    throw error;
  } finally {
    span.end();
  }
}

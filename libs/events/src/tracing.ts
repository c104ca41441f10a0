import {
  propagation,
  ROOT_CONTEXT,
  SpanKind,
  SpanStatusCode,
  trace,
  type Attributes,
} from '@opentelemetry/api';
import type { CloudEventAttributes } from './decode';

const tracer = trace.getTracer('@costgov/events');

/**
 * Runs a handler in a CONSUMER span whose parent is the trace context the event carries (its
 * `traceparent`), so the consumer's work joins the trace of the change that produced the event. With
 * no OpenTelemetry SDK registered this costs nothing.
 */
export function withConsumeSpan<T>(
  attributes: CloudEventAttributes,
  target: { subject: string; durable: string; deliveryCount: number },
  handle: () => Promise<T>,
): Promise<T> {
  const carrier: Record<string, string> = {};
  if (attributes.traceparent) carrier.traceparent = attributes.traceparent;
  if (attributes.tracestate) carrier.tracestate = attributes.tracestate;
  const parent = propagation.extract(ROOT_CONTEXT, carrier);
  const spanAttributes: Attributes = {
    'messaging.system': 'nats',
    'messaging.operation.type': 'process',
    'messaging.destination.name': target.subject,
    'messaging.consumer.group.name': target.durable,
    'messaging.message.id': attributes.id,
    'messaging.delivery_count': target.deliveryCount,
    'cloudevents.event_id': attributes.id,
    'cloudevents.event_type': attributes.type,
    'cloudevents.event_source': attributes.source,
  };
  return tracer.startActiveSpan(
    `consume ${attributes.type}`,
    { kind: SpanKind.CONSUMER, attributes: spanAttributes },
    parent,
    async (span) => {
      try {
        return await handle();
      } catch (error) {
        const message = error instanceof Error ? error.message : String(error);
        span.recordException(error instanceof Error ? error : message);
        span.setStatus({ code: SpanStatusCode.ERROR, message });
        throw error;
      } finally {
        span.end();
      }
    },
  );
}

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { context, propagation, trace } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { W3CTraceContextPropagator } from '@opentelemetry/core';
import {
  BasicTracerProvider,
  InMemorySpanExporter,
  SimpleSpanProcessor,
} from '@opentelemetry/sdk-trace-base';
import { newId } from '@costgov/ids';
import { publish, startNotifier, teamCtx, violationCreated, type Fixture } from './fixture';
import { startReceiver, type Receiver } from './receiver';

// What startTelemetry registers without an exporter: W3C propagation and async context, no HTTP
// instrumentation. The spans are kept in memory to be looked at.
const spans = new InMemorySpanExporter();
context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
propagation.setGlobalPropagator(new W3CTraceContextPropagator());
trace.setGlobalTracerProvider(new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(spans)] }));

let fixture: Fixture;
let receiver: Receiver;

beforeAll(async () => {
  fixture = await startNotifier();
  receiver = await startReceiver();
});

afterAll(async () => {
  await fixture?.stop();
  await receiver?.close();
});

describe('the trace of an attempt', () => {
  it('reaches the receiver as traceparent of the CLIENT span, and the span keeps no path or query of the URL', async () => {
    const ctx = teamCtx(newId('team'));
    const url = receiver.url('/hook/T0KEN?sig=s3cret');
    await fixture.client.createWebhook({ url, events: ['*'], description: '' }, ctx);
    const traceId = '4bf92f3577b34da6a3ce929d0e0e4736';
    const event = { ...violationCreated(ctx.teamId), traceparent: `00-${traceId}-00f067aa0ba902b7-01` };
    await publish(fixture, event);
    expect(await fixture.notifiers[0]!.module.dispatcher().runOnce()).toBe(1);

    const deliver = spans.getFinishedSpans().find((span) => span.name === 'webhook deliver');
    expect(deliver).toBeDefined();
    expect(deliver!.spanContext().traceId).toBe(traceId);
    const [request] = receiver.received;
    expect(request!.headers.traceparent).toBe(`00-${traceId}-${deliver!.spanContext().spanId}-01`);

    expect(deliver!.attributes).toMatchObject({
      'url.scheme': 'http',
      'server.address': '127.0.0.1',
      'server.port': receiver.port,
    });
    expect(deliver!.attributes['url.full']).toBeUndefined();
    expect(JSON.stringify(deliver!.attributes)).not.toMatch(/T0KEN|s3cret/);
  });
});

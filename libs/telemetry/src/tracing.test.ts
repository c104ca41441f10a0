import { createRequire } from 'node:module';
import { join } from 'node:path';
import { context, propagation, ROOT_CONTEXT, trace } from '@opentelemetry/api';
import { afterAll, describe, expect, it } from 'vitest';
import { startTelemetry } from './tracing';

const traceId = '0af7651916cd43dd8448eb211c80319c';
const traceparent = `00-${traceId}-b7ad6b7169203331-01`;

describe('tracing without an exporter', () => {
  delete process.env.OTEL_EXPORTER_OTLP_ENDPOINT;
  const sdk = startTelemetry('tracing-test');
  afterAll(() => sdk.shutdown());

  it('installs no instrumentation: the HTTP server and gRPC client are as Node and grpc-js made them', () => {
    // Loaded after the SDK started, as a process's main.ts does after instrument.ts.
    const load = createRequire(join(process.cwd(), 'index.js'));
    const http = load('http') as typeof import('node:http');
    const grpc = load('@grpc/grpc-js') as typeof import('@grpc/grpc-js');
    expect(http.Server.prototype.emit).not.toHaveProperty('__wrapped');
    expect(grpc.Client.prototype.makeUnaryRequest).not.toHaveProperty('__wrapped');
  });

  it('still propagates W3C trace context through async work', async () => {
    const incoming = propagation.extract(ROOT_CONTEXT, { traceparent });
    const seen = await context.with(incoming, async () => {
      await new Promise((resolve) => setTimeout(resolve, 1));
      const carrier: Record<string, string> = {};
      propagation.inject(context.active(), carrier);
      return { active: trace.getActiveSpan()?.spanContext().traceId, carrier };
    });
    expect(seen.active).toBe(traceId);
    expect(seen.carrier.traceparent).toBe(traceparent);
  });
});

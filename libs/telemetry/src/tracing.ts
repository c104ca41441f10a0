import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { GrpcInstrumentation } from '@opentelemetry/instrumentation-grpc';
import { HttpInstrumentation } from '@opentelemetry/instrumentation-http';
import { PgInstrumentation } from '@opentelemetry/instrumentation-pg';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { NodeSDK } from '@opentelemetry/sdk-node';
import {
  AlwaysOffSampler,
  BatchSpanProcessor,
  ParentBasedSampler,
  TraceIdRatioBasedSampler,
} from '@opentelemetry/sdk-trace-base';

let sdk: NodeSDK | undefined;

/**
 * Starts OpenTelemetry tracing. Must run before express, grpc-js, pg or http are loaded, so each
 * process's `instrument.ts` calls it and `main.ts` imports that file first. Context propagates and logs
 * carry trace ids either way; spans are recorded and exported only when OTEL_EXPORTER_OTLP_ENDPOINT is
 * set (sampled by OTEL_TRACES_SAMPLER_ARG, default all).
 */
export function startTelemetry(serviceName: string): { shutdown(): Promise<void> } {
  if (sdk) return sdk;
  const endpoint = process.env.OTEL_EXPORTER_OTLP_ENDPOINT;
  sdk = new NodeSDK({
    resource: resourceFromAttributes({ 'service.name': process.env.OTEL_SERVICE_NAME ?? serviceName }),
    spanProcessors: endpoint ? [new BatchSpanProcessor(new OTLPTraceExporter())] : [],
    sampler: endpoint
      ? new ParentBasedSampler({
          root: new TraceIdRatioBasedSampler(Number(process.env.OTEL_TRACES_SAMPLER_ARG ?? 1)),
        })
      : new AlwaysOffSampler(),
    // Without an exporter no instrumentation is installed: nothing would record their spans, and they
    // cost about a quarter of the gateway's CPU per request. The W3C context still flows, by the
    // propagator and context manager the SDK registers: the gateway and the gRPC server continue an
    // incoming `traceparent` (or start a trace) and the gRPC client and the bus pass it on
    // (`withIncomingTrace` and `injectTrace` of @costgov/log), so log lines keep their trace ids.
    // No express instrumentation either: a span per middleware layer says little the HTTP span does not.
    instrumentations: endpoint
      ? [
          new HttpInstrumentation({
            ignoreIncomingRequestHook: (req) => ['/healthz', '/readyz', '/metrics'].includes(req.url ?? ''),
          }),
          new GrpcInstrumentation({ ignoreGrpcMethods: ['Check', 'Watch'] }),
          // Queries outside a request (relays, pollers) would each start a trace of their own.
          new PgInstrumentation({ requireParentSpan: true }),
        ]
      : [],
  });
  sdk.start();
  return sdk;
}

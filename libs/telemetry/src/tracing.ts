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
  SimpleSpanProcessor,
  TraceIdRatioBasedSampler,
  type SpanExporter,
} from '@opentelemetry/sdk-trace-base';
import { loadConfigOrExit, optionalUrl, z } from '@costgov/config';
import { httpInstrumentationConfig } from './http-spans';

/**
 * The OTEL_* variables this code reads (the SDK reads its others itself). Parsed on their own, not with
 * the process's configuration: tracing starts before anything else is loaded.
 */
export const telemetryConfig = z.object({
  /** Where spans are exported (the OTLP exporter reads it too); unset: none are recorded. */
  OTEL_EXPORTER_OTLP_ENDPOINT: optionalUrl,
  /** Share of traces recorded when exporting. */
  OTEL_TRACES_SAMPLER_ARG: z.coerce.number().min(0).max(1).default(1),
  /** `service.name` of the spans; the process's name when unset. */
  OTEL_SERVICE_NAME: z.string().optional(),
});

let sdk: NodeSDK | undefined;

export interface TelemetryOptions {
  /** Where spans go instead of OTLP (tests): instrumentation is installed as with an endpoint. */
  spanExporter?: SpanExporter;
}

/**
 * The semantic conventions the instrumentations emit: the stable HTTP ones (`http.request.method`,
 * `url.*`, `server.*`, also on gRPC spans) and database ones (`db.*`), never the old `http.url`,
 * `http.target` and `net.*`, which would carry unredacted URLs. The instrumentations read this variable
 * only (no option in 0.208), so it is set before they are made; an operator's other entries stay.
 */
function optInToStableConventions(env: NodeJS.ProcessEnv): void {
  const kept = (env.OTEL_SEMCONV_STABILITY_OPT_IN ?? '')
    .split(',')
    .map((entry) => entry.trim())
    .filter((entry) => entry !== '' && !/^(http|database)(\/dup)?$/.test(entry));
  env.OTEL_SEMCONV_STABILITY_OPT_IN = [...kept, 'http', 'database'].join(',');
}

/**
 * Starts OpenTelemetry tracing. Must run before express, grpc-js, pg or http are loaded, so each
 * process's `instrument.ts` calls it and `main.ts` imports that file first. Context propagates and logs
 * carry trace ids either way; spans are recorded and exported only when OTEL_EXPORTER_OTLP_ENDPOINT is
 * set (sampled by OTEL_TRACES_SAMPLER_ARG, default all) or a test gives an exporter.
 */
export function startTelemetry(
  serviceName: string,
  { spanExporter }: TelemetryOptions = {},
): { shutdown(): Promise<void> } {
  if (sdk) return sdk;
  const config = loadConfigOrExit(telemetryConfig);
  const endpoint = config.OTEL_EXPORTER_OTLP_ENDPOINT;
  const exporting = Boolean(endpoint || spanExporter);
  if (exporting) optInToStableConventions(process.env);
  sdk = new NodeSDK({
    resource: resourceFromAttributes({ 'service.name': config.OTEL_SERVICE_NAME || serviceName }),
    spanProcessors: spanExporter
      ? [new SimpleSpanProcessor(spanExporter)]
      : endpoint
        ? [new BatchSpanProcessor(new OTLPTraceExporter())]
        : [],
    sampler: exporting
      ? new ParentBasedSampler({
          root: new TraceIdRatioBasedSampler(config.OTEL_TRACES_SAMPLER_ARG),
        })
      : new AlwaysOffSampler(),
    // Without an exporter no instrumentation is installed: nothing would record their spans, and they
    // cost about a quarter of the gateway's CPU per request. The W3C context still flows, by the
    // propagator and context manager the SDK registers: the gateway and the gRPC server continue an
    // incoming `traceparent` (or start a trace) and the gRPC client and the bus pass it on
    // (`withIncomingTrace` and `injectTrace` of @costgov/log), so log lines keep their trace ids.
    // No express instrumentation either: a span per middleware layer says little the HTTP span does not;
    // the gateway names its HTTP span after the route itself (serverSpanRouteNamer).
    instrumentations: exporting
      ? [
          new HttpInstrumentation(httpInstrumentationConfig),
          new GrpcInstrumentation({ ignoreGrpcMethods: ['Check', 'Watch'] }),
          // Queries outside a request (relays, pollers) would each start a trace of their own.
          new PgInstrumentation({ requireParentSpan: true }),
        ]
      : [],
  });
  sdk.start();
  return sdk;
}

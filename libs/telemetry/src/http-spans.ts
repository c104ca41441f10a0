import { context } from '@opentelemetry/api';
import { getRPCMetadata, RPCType, suppressTracing } from '@opentelemetry/core';
import type { HttpInstrumentationConfig } from '@opentelemetry/instrumentation-http';
import { outgoingUrl, redactQuery } from './redaction';

const probes = new Set(['/healthz', '/readyz', '/metrics']);

/**
 * How the HTTP instrumentation describes requests: no spans for probes, and no URL secret in any span.
 * Its hook attributes replace its own, so `url.full` of a client span is the redacted URL (credentials
 * and every query value; its own redaction covers four AWS and Google signature parameters only) and
 * `url.query` of a server span keeps parameter names without values.
 */
export const httpInstrumentationConfig: HttpInstrumentationConfig = {
  ignoreIncomingRequestHook: (req) => probes.has(req.url ?? ''),
  startOutgoingSpanHook: (options) => ({ 'url.full': outgoingUrl(options) }),
  startIncomingSpanHook: (req) => {
    const queryAt = req.url?.indexOf('?') ?? -1;
    return queryAt < 0 ? {} : { 'url.query': redactQuery(req.url!.slice(queryAt + 1)) };
  },
};

/**
 * What names the server span of the request being handled after its route template, as a framework's
 * instrumentation would: `http.route`, and the span name `METHOD /route`. To be taken in the request's
 * context (the HTTP instrumentation's) and called before the response closes; undefined when no span is
 * recorded (no exporter), so a request costs nothing then.
 */
export function serverSpanRouteNamer(): ((route: string) => void) | undefined {
  const metadata = getRPCMetadata(context.active());
  if (metadata?.type !== RPCType.HTTP) return undefined;
  return (route) => {
    metadata.route = route;
  };
}

/**
 * Runs `fn` without spans from the instrumentations (the standard tracing suppression), for a request
 * its caller already describes in a span of its own that shows only what may be shown: a webhook URL's
 * path and query are the receiver's secret, so the HTTP instrumentation must not record them as
 * `url.full`. Context still propagates: headers the caller injected are sent as they are.
 */
export function untraced<T>(fn: () => T): T {
  return context.with(suppressTracing(context.active()), fn);
}

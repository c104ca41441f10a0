import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { gunzipSync } from 'node:zlib';

/** One exported span as an OTLP/HTTP JSON request carries it, with its resource's `service.name`. */
export interface ReceivedSpan {
  traceId: string;
  spanId: string;
  /** Absent (or empty) on a trace's root span. */
  parentSpanId?: string;
  name: string;
  /** OTLP SpanKind: 1 internal, 2 server, 3 client, 4 producer, 5 consumer. */
  kind: number;
  service: string;
  attributes: Record<string, string | number | boolean | undefined>;
  /** The span as the exporter sent it (events, status and links included), to search for what must not be there. */
  text: string;
}

export const spanKind = { internal: 1, server: 2, client: 3, producer: 4, consumer: 5 } as const;

export interface OtlpReceiver {
  /** What processes get as OTEL_EXPORTER_OTLP_ENDPOINT (the exporter appends /v1/traces). */
  endpoint: string;
  spans: ReceivedSpan[];
  /** Requests that were not OTLP/HTTP JSON traces, so a test can tell an exporter that sent nothing useful. */
  rejected: string[];
  close(): Promise<void>;
}

interface AnyValue {
  stringValue?: string;
  intValue?: string | number;
  doubleValue?: number;
  boolValue?: boolean;
}

interface ExportRequest {
  resourceSpans?: Array<{
    resource?: { attributes?: Array<{ key: string; value: AnyValue }> };
    scopeSpans?: Array<{
      spans?: Array<{
        traceId: string;
        spanId: string;
        parentSpanId?: string;
        name: string;
        kind: number;
        attributes?: Array<{ key: string; value: AnyValue }>;
      }>;
    }>;
  }>;
}

const valueOf = (value: AnyValue) =>
  value.stringValue ??
  (value.intValue !== undefined ? Number(value.intValue) : undefined) ??
  value.doubleValue ??
  value.boolValue;

const attributesOf = (list: Array<{ key: string; value: AnyValue }> = []) =>
  Object.fromEntries(list.map(({ key, value }) => [key, valueOf(value)]));

/**
 * An OTLP/HTTP collector of the test's own: accepts `POST /v1/traces` in the JSON encoding (what
 * @opentelemetry/exporter-trace-otlp-http sends) and keeps every span. Other signals are answered 200
 * and dropped.
 */
export async function startOtlpReceiver(): Promise<OtlpReceiver> {
  const spans: ReceivedSpan[] = [];
  const rejected: string[] = [];
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      res.setHeader('content-type', 'application/json');
      if (req.method !== 'POST' || req.url !== '/v1/traces') return void res.end('{}');
      try {
        let body = Buffer.concat(chunks);
        if (req.headers['content-encoding'] === 'gzip') body = gunzipSync(body);
        if (!(req.headers['content-type'] ?? '').startsWith('application/json')) {
          throw new Error(`content-type ${req.headers['content-type']}`);
        }
        const request = JSON.parse(body.toString('utf8')) as ExportRequest;
        for (const resourceSpans of request.resourceSpans ?? []) {
          const service = String(attributesOf(resourceSpans.resource?.attributes)['service.name']);
          for (const scope of resourceSpans.scopeSpans ?? []) {
            for (const span of scope.spans ?? []) {
              spans.push({
                traceId: span.traceId,
                spanId: span.spanId,
                parentSpanId: span.parentSpanId || undefined,
                name: span.name,
                kind: span.kind,
                service,
                attributes: attributesOf(span.attributes),
                text: JSON.stringify(span),
              });
            }
          }
        }
        res.end('{}');
      } catch (error) {
        rejected.push(String(error));
        res.statusCode = 400;
        res.end('{}');
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    endpoint: `http://127.0.0.1:${port}`,
    spans,
    rejected,
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

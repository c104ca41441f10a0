import http from 'node:http';
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry, type Metric } from 'prom-client';

const registry = new Registry();
collectDefaultMetrics({ register: registry });

/** An outbox's unpublished events, as one service's database reports them. */
export interface OutboxBacklog {
  pending: number;
  /** Age of the oldest unpublished event; 0 when there is none. */
  oldestAgeSeconds: number;
}

/** Messages a durable consumer has not been handed yet. */
export interface ConsumerLag {
  system: string;
  /** The consumer's name at the broker (`<namespace>_<durable>`), as `nats consumer ls` shows it. */
  durable: string;
  pending: number;
}

/** How long a scrape waits for a source (a database, NATS) before leaving its series out. */
const sourceTimeoutMs = 2_000;
const outboxSources = new Map<string, () => Promise<OutboxBacklog>>();
const lagSources = new Set<() => Promise<ConsumerLag[]>>();

const within = <T>(read: () => Promise<T>): Promise<T | undefined> => {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<undefined>((resolve) => {
    timer = setTimeout(() => resolve(undefined), sourceTimeoutMs);
  });
  return Promise.race([
    Promise.resolve()
      .then(read)
      .catch(() => undefined),
    timeout,
  ]).finally(() => clearTimeout(timer));
};

/**
 * The outboxes' backlog, read once per scrape for both outbox gauges (prom-client collects the metrics
 * of a scrape concurrently, so the first gauge's read is shared with the second).
 */
let backlogRead: { at: number; result: Promise<Array<[string, OutboxBacklog | undefined]>> } | undefined;
function backlogs(): Promise<Array<[string, OutboxBacklog | undefined]>> {
  if (!backlogRead || Date.now() - backlogRead.at > 500) {
    const result = Promise.all(
      [...outboxSources].map(
        async ([service, read]) => [service, await within(read)] as [string, OutboxBacklog | undefined],
      ),
    );
    backlogRead = { at: Date.now(), result };
  }
  return backlogRead.result;
}

/** The process's Prometheus registry, served on /metrics; services register their own metrics in it. */
export const metrics = { registry };

/**
 * Puts `metric` on /metrics from the first time the process records it (or watches a source for it):
 * a process serves the shared metrics it records and no other (identity no HTTP histogram, the gateway
 * no gRPC one). A metric a service defines in its own package is registered there, with the package.
 */
const servedMetrics = new WeakSet<Metric>();
function served<M extends Metric>(metric: M): M {
  if (!servedMetrics.has(metric)) {
    registry.registerMetric(metric);
    servedMetrics.add(metric);
  }
  return metric;
}

/** OpenTelemetry's http.server.request.duration, with its attribute names and bucket advice. */
const httpRequests = new Histogram({
  name: 'http_server_request_duration_seconds',
  help: 'Duration of HTTP requests served by the gateway (OpenTelemetry http.server.request.duration).',
  labelNames: ['http_request_method', 'http_route', 'http_response_status_code'],
  buckets: [0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.25, 0.5, 0.75, 1, 2.5, 5, 7.5, 10],
  registers: [],
});

/**
 * OpenTelemetry's rpc.server.call.duration (semantic conventions 1.45: seconds, `rpc.system.name`, the
 * fully qualified `rpc.method`, the status name as `rpc.status_code`, and `error.type` on a server error).
 * The buckets are the conventions' advice with two more below 5 ms, where most calls end.
 */
const rpcCalls = new Histogram({
  name: 'rpc_server_call_duration_seconds',
  help: 'Duration of gRPC calls served (OpenTelemetry rpc.server.call.duration).',
  labelNames: ['rpc_system_name', 'rpc_method', 'rpc_status_code', 'error_type'],
  buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.25, 0.5, 0.75, 1, 2.5, 5, 7.5, 10],
  registers: [],
});

const outboxEventsPending = new Gauge({
  name: 'outbox_events_pending',
  help: "Events written to a service's outbox and not yet published to the bus (read at each scrape).",
  labelNames: ['service'],
  registers: [],
  async collect() {
    this.reset();
    for (const [service, backlog] of await backlogs()) {
      if (backlog) this.set({ service }, backlog.pending);
    }
  },
});

const outboxOldestEventAge = new Gauge({
  name: 'outbox_oldest_event_age_seconds',
  help: "Age of the oldest unpublished event of a service's outbox; 0 when every event is published.",
  labelNames: ['service'],
  registers: [],
  async collect() {
    this.reset();
    for (const [service, backlog] of await backlogs()) {
      if (backlog) this.set({ service }, backlog.oldestAgeSeconds);
    }
  },
});

const consumerLag = new Gauge({
  name: 'messaging_consumer_lag_messages',
  help: 'Messages of its streams a durable consumer has not been handed yet (JetStream num_pending).',
  labelNames: ['messaging_system', 'messaging_consumer_group_name'],
  registers: [],
  async collect() {
    this.reset();
    const reads = await Promise.all([...lagSources].map((read) => within(read)));
    const totals = new Map<string, { system: string; durable: string; pending: number }>();
    for (const lag of reads.flatMap((read) => read ?? [])) {
      const key = `${lag.system}\u0000${lag.durable}`;
      const total = totals.get(key) ?? { ...lag, pending: 0 };
      total.pending += lag.pending;
      totals.set(key, total);
    }
    for (const { system, durable, pending } of totals.values()) {
      this.set({ messaging_system: system, messaging_consumer_group_name: durable }, pending);
    }
  },
});

const consumerRedeliveries = new Counter({
  name: 'messaging_consumer_redeliveries_total',
  help: 'Messages handed to a durable consumer again (a failed handler, an expired ack wait).',
  labelNames: ['messaging_system', 'messaging_consumer_group_name'],
  registers: [],
});

const uncaughtErrors = new Counter({
  name: 'process_uncaught_errors_total',
  help: 'Errors that escaped every handler and reached the process guard (which logs them and lives on).',
  labelNames: ['kind'],
  registers: [],
});

/**
 * Reports `service`'s outbox backlog on /metrics (outbox_events_pending, outbox_oldest_event_age_seconds),
 * read at each scrape; a read that fails or takes over 2 s leaves the service's series out of that
 * scrape. Returns the function that stops reporting it.
 */
export function watchOutbox(service: string, read: () => Promise<OutboxBacklog>): () => void {
  served(outboxEventsPending);
  served(outboxOldestEventAge);
  outboxSources.set(service, read);
  backlogRead = undefined;
  return () => {
    if (outboxSources.get(service) === read) outboxSources.delete(service);
    backlogRead = undefined;
  };
}

/** Reports the lag of a bus's durables on /metrics (messaging_consumer_lag_messages), read at each scrape. */
export function watchConsumerLag(read: () => Promise<ConsumerLag[]>): () => void {
  served(consumerLag);
  lagSources.add(read);
  return () => void lagSources.delete(read);
}

/** Counts a message handed to a durable consumer again. */
export const countRedelivery = ({ system, durable }: { system: string; durable: string }): void =>
  served(consumerRedeliveries).inc({ messaging_system: system, messaging_consumer_group_name: durable });

/** HTTP methods kept as they are in `http_request_method`; any other is `_OTHER` (OpenTelemetry). */
const knownMethods = new Set([
  'CONNECT',
  'DELETE',
  'GET',
  'HEAD',
  'OPTIONS',
  'PATCH',
  'POST',
  'PUT',
  'TRACE',
]);

/** Records one served HTTP request under OpenTelemetry's attribute names. */
export function observeHttpRequest(
  { method, route, status }: { method: string; route: string; status: number },
  seconds: number,
): void {
  served(httpRequests).observe(
    {
      http_request_method: knownMethods.has(method) ? method : '_OTHER',
      http_route: route,
      http_response_status_code: status,
    },
    seconds,
  );
}

/**
 * gRPC statuses that are the server's failure, hence `error.type` (the gRPC semantic conventions' list
 * for server spans); the others (NOT_FOUND, INVALID_ARGUMENT, ...) are answers.
 */
const serverErrors = new Set([
  'UNKNOWN',
  'DEADLINE_EXCEEDED',
  'UNIMPLEMENTED',
  'INTERNAL',
  'UNAVAILABLE',
  'DATA_LOSS',
]);

/** Records one served gRPC call under OpenTelemetry's attribute names; `code` is the status name (`OK`). */
export function observeRpcCall(
  { service, method, code }: { service: string; method: string; code: string },
  seconds: number,
): void {
  const labels = { rpc_system_name: 'grpc', rpc_method: `${service}/${method}`, rpc_status_code: code };
  served(rpcCalls).observe(serverErrors.has(code) ? { ...labels, error_type: code } : labels, seconds);
}

/** Counts an error that reached the process guard (`uncaught_exception`, `unhandled_rejection`). */
export const countUncaughtError = (kind: string): void => served(uncaughtErrors).inc({ kind });

export interface MetricsServerOptions {
  /** Address to listen on (METRICS_HOST); loopback unless the deployment opens it. */
  host?: string;
  /** Told when the port is taken and when binding finally succeeds or is given up. */
  logger?: { warn(fields: object, message: string): void; info(fields: object, message: string): void };
  /** Pause between binding attempts while the port is taken. */
  retryEveryMs?: number;
  /** How long to keep trying before giving up (metrics are then not served; the process lives on). */
  retryForMs?: number;
}

export interface MetricsServer {
  /** The bound port, or the requested one while binding is still being retried. */
  port: number;
  close(): Promise<void>;
}

/**
 * Serves /metrics and /healthz on their own port, away from the public API. A port still held (by the
 * process this one replaces, say) never ends the process: binding is retried in the background.
 */
export function startMetricsServer(port: number, options: MetricsServerOptions = {}): Promise<MetricsServer> {
  const { host = '127.0.0.1', logger, retryEveryMs = 1_000, retryForMs = 60_000 } = options;
  const server = http.createServer(async (req, res) => {
    if (req.url === '/metrics') {
      res.setHeader('Content-Type', registry.contentType);
      res.end(await registry.metrics());
    } else if (req.url === '/healthz') {
      res.setHeader('Content-Type', 'application/json');
      res.end('{"status":"ok"}');
    } else {
      res.statusCode = 404;
      res.end();
    }
  });
  const deadline = Date.now() + retryForMs;
  let retry: NodeJS.Timeout | undefined;
  let closed = false;
  const handle: MetricsServer = {
    port,
    close: () => {
      closed = true;
      clearTimeout(retry);
      return new Promise((done) => (server.listening ? server.close(() => done()) : done()));
    },
  };
  const attempt = (first: boolean) =>
    new Promise<void>((settled) => {
      const onError = (error: NodeJS.ErrnoException) => {
        server.off('listening', onListening);
        if (first) logger?.warn({ err: error, port }, 'metrics port unavailable; retrying in the background');
        if (closed) return settled();
        if (Date.now() >= deadline) {
          logger?.warn({ port, retryForMs }, 'metrics port still unavailable; /metrics is not served');
          return settled();
        }
        retry = setTimeout(() => void attempt(false), retryEveryMs);
        retry.unref();
        settled();
      };
      const onListening = () => {
        server.off('error', onError);
        const address = server.address();
        handle.port = typeof address === 'object' && address ? address.port : port;
        if (!first) logger?.info({ port: handle.port }, 'metrics port bound');
        settled();
      };
      server.once('error', onError);
      server.once('listening', onListening);
      server.listen(port, host);
    });
  return attempt(true).then(() => handle);
}

import http from 'node:http';
import { collectDefaultMetrics, Counter, Histogram, Registry } from 'prom-client';

const registry = new Registry();
collectDefaultMetrics({ register: registry });

/** The process's Prometheus metrics: one registry, served on /metrics. */
export const metrics = {
  registry,
  httpRequests: new Histogram({
    name: 'http_server_request_duration_seconds',
    help: 'HTTP requests served by the gateway.',
    labelNames: ['method', 'route', 'status'],
    buckets: [0.002, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5],
    registers: [registry],
  }),
  rpcCalls: new Histogram({
    name: 'rpc_server_duration_seconds',
    help: 'gRPC calls served.',
    labelNames: ['service', 'method', 'code'],
    buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1],
    registers: [registry],
  }),
  budgetEvaluations: new Counter({
    name: 'budget_evaluations_total',
    help: 'Budget evaluations: evaluated, deferred to the sweep (costs or the database unavailable), or failed.',
    labelNames: ['outcome'],
    registers: [registry],
  }),
  budgetUnconvertedSpend: new Counter({
    name: 'budget_unconverted_spend_total',
    help: 'Budget evaluations that found spend in a currency without an exchange rate to the budget currency (not counted).',
    labelNames: ['from_currency', 'to_currency'],
    registers: [registry],
  }),
  uncaughtErrors: new Counter({
    name: 'process_uncaught_errors_total',
    help: 'Errors that escaped every handler and reached the process guard (which logs them and lives on).',
    labelNames: ['kind'],
    registers: [registry],
  }),
};

export interface MetricsServerOptions {
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
  const { host = '0.0.0.0', logger, retryEveryMs = 1_000, retryForMs = 60_000 } = options;
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

import http from 'node:http';
import { collectDefaultMetrics, Histogram, Registry } from 'prom-client';

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
};

/** Serves /metrics and /healthz on their own port, away from the public API. */
export function startMetricsServer(
  port: number,
  host = '0.0.0.0',
): Promise<{ port: number; close(): Promise<void> }> {
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
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      const address = server.address();
      resolve({
        port: typeof address === 'object' && address ? address.port : port,
        close: () => new Promise((done) => server.close(() => done())),
      });
    });
  });
}

import { createServer, type Server } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { eventually } from '@costgov/testing';
import {
  countRedelivery,
  metrics,
  observeHttpRequest,
  observeRpcCall,
  startMetricsServer,
  watchConsumerLag,
  watchOutbox,
  type MetricsServer,
} from '../src/metrics';

const occupy = (): Promise<Server> =>
  new Promise((resolve) => {
    const server = createServer();
    server.listen(0, '127.0.0.1', () => resolve(server));
  });
const portOf = (server: Server) => (server.address() as { port: number }).port;

let running: MetricsServer | undefined;
afterEach(async () => {
  await running?.close();
  running = undefined;
});

describe('the metrics server', () => {
  it('serves /metrics on a free port', async () => {
    running = await startMetricsServer(0, { host: '127.0.0.1' });
    const response = await fetch(`http://127.0.0.1:${running.port}/metrics`);
    expect(response.status).toBe(200);
    expect(await response.text()).toMatch(/process_cpu_user_seconds_total/);
  });

  it('does not fail when its port is held, warns, and binds once the port is free again', async () => {
    const holder = await occupy();
    const port = portOf(holder);
    const warnings: string[] = [];
    const infos: string[] = [];
    running = await startMetricsServer(port, {
      host: '127.0.0.1',
      retryEveryMs: 50,
      logger: { warn: (_fields, message) => warnings.push(message), info: (_f, m) => infos.push(m) },
    });
    expect(warnings).toEqual(['metrics port unavailable; retrying in the background']);
    await new Promise<void>((resolve) => holder.close(() => resolve()));
    const deadline = Date.now() + 5_000;
    let status = 0;
    while (Date.now() < deadline && status !== 200) {
      status = await fetch(`http://127.0.0.1:${port}/healthz`).then(
        (r) => r.status,
        () => 0,
      );
      if (status !== 200) await new Promise((resolve) => setTimeout(resolve, 50));
    }
    expect(status).toBe(200);
    expect(infos).toEqual(['metrics port bound']);
  });

  it('gives up after retryForMs with a warning, and close() still resolves', async () => {
    const holder = await occupy();
    const warnings: string[] = [];
    running = await startMetricsServer(portOf(holder), {
      host: '127.0.0.1',
      retryEveryMs: 20,
      retryForMs: 100,
      logger: { warn: (_fields, message) => warnings.push(message), info: () => undefined },
    });
    // Polled rather than slept: five retries 20 ms apart can run late on a loaded machine. 2 s is still
    // far inside the 60 s it would keep retrying for if retryForMs were not applied.
    await eventually(
      () => expect(warnings.at(-1)).toBe('metrics port still unavailable; /metrics is not served'),
      2_000,
    );
    await running.close();
    running = undefined;
    await new Promise<void>((resolve) => holder.close(() => resolve()));
  });
});

/** The exposition lines of one metric, as /metrics serves them. */
const linesOf = async (name: string) =>
  (await metrics.registry.metrics()).split('\n').filter((line) => line.startsWith(`${name}{`));

describe('metrics under OpenTelemetry semantic-convention names', () => {
  it('records HTTP requests by http_request_method, http_route and http_response_status_code', async () => {
    observeHttpRequest({ method: 'POST', route: '/v1/guard/budgets', status: 201 }, 0.02);
    observeHttpRequest({ method: 'BREW', route: 'unmatched', status: 404 }, 0.001);
    const lines = await linesOf('http_server_request_duration_seconds_count');
    expect(lines).toContain(
      'http_server_request_duration_seconds_count{http_request_method="POST",http_route="/v1/guard/budgets",http_response_status_code="201"} 1',
    );
    // A method outside the HTTP standard's is _OTHER: a client cannot add series at will.
    expect(lines).toContain(
      'http_server_request_duration_seconds_count{http_request_method="_OTHER",http_route="unmatched",http_response_status_code="404"} 1',
    );
    expect(await linesOf('http_server_request_duration_seconds_bucket')).toContain(
      'http_server_request_duration_seconds_bucket{le="0.5",http_request_method="POST",http_route="/v1/guard/budgets",http_response_status_code="201"} 1',
    );
  });

  it('records gRPC calls as rpc.server.call.duration: rpc_system_name, the full rpc_method, rpc_status_code', async () => {
    const service = 'costgov.costs.v1.CostDataService';
    observeRpcCall({ service, method: 'GetSpend', code: 'OK' }, 0.0004);
    observeRpcCall({ service, method: 'GetSpend', code: 'NOT_FOUND' }, 0.002);
    observeRpcCall({ service, method: 'GetSpend', code: 'UNAVAILABLE' }, 0.01);
    const lines = await linesOf('rpc_server_call_duration_seconds_count');
    const method = 'rpc_method="costgov.costs.v1.CostDataService/GetSpend"';
    expect(lines).toEqual([
      `rpc_server_call_duration_seconds_count{rpc_system_name="grpc",${method},rpc_status_code="OK"} 1`,
      // An answer the caller gets (not found) is no error of the server's: no error_type.
      `rpc_server_call_duration_seconds_count{rpc_system_name="grpc",${method},rpc_status_code="NOT_FOUND"} 1`,
      `rpc_server_call_duration_seconds_count{rpc_system_name="grpc",${method},rpc_status_code="UNAVAILABLE",error_type="UNAVAILABLE"} 1`,
    ]);
    // The conventions' advised buckets, and finer ones below 5 ms.
    expect(await linesOf('rpc_server_call_duration_seconds_bucket')).toContain(
      `rpc_server_call_duration_seconds_bucket{le="0.001",rpc_system_name="grpc",${method},rpc_status_code="OK"} 1`,
    );
    expect(
      (await linesOf('rpc_server_call_duration_seconds_bucket')).some((l) => l.includes('le="7.5"')),
    ).toBe(true);
  });

  it('reads the outbox backlog of each watched service at scrape time, leaving out a failed read', async () => {
    let pending = 3;
    const unwatchBudgets = watchOutbox('budgets', async () => ({ pending, oldestAgeSeconds: 42.5 }));
    const unwatchCosts = watchOutbox('costs', () => Promise.reject(new Error('database down')));
    expect(await linesOf('outbox_events_pending')).toEqual(['outbox_events_pending{service="budgets"} 3']);
    expect(await linesOf('outbox_oldest_event_age_seconds')).toEqual([
      'outbox_oldest_event_age_seconds{service="budgets"} 42.5',
    ]);
    pending = 0;
    await new Promise((resolve) => setTimeout(resolve, 600)); // past the read shared within a scrape
    expect(await linesOf('outbox_events_pending')).toEqual(['outbox_events_pending{service="budgets"} 0']);
    unwatchBudgets();
    unwatchCosts();
    expect(await linesOf('outbox_events_pending')).toEqual([]);
  });

  it('sums the lag of a durable over the buses that report it, and counts redeliveries', async () => {
    const unwatchA = watchConsumerLag(async () => [
      { system: 'nats', durable: 'costgov_budgets_spend_changed', pending: 2 },
      { system: 'nats', durable: 'costgov_violations_budget_events', pending: 0 },
    ]);
    const unwatchB = watchConsumerLag(async () => [
      { system: 'nats', durable: 'costgov_budgets_spend_changed', pending: 5 },
    ]);
    const unwatchC = watchConsumerLag(() => new Promise(() => undefined)); // never answers: left out after 2 s
    expect(await linesOf('messaging_consumer_lag_messages')).toEqual([
      'messaging_consumer_lag_messages{messaging_system="nats",messaging_consumer_group_name="costgov_budgets_spend_changed"} 7',
      'messaging_consumer_lag_messages{messaging_system="nats",messaging_consumer_group_name="costgov_violations_budget_events"} 0',
    ]);
    unwatchA();
    unwatchB();
    unwatchC();
    countRedelivery({ system: 'memory', durable: 'costgov_budgets_spend_changed' });
    countRedelivery({ system: 'memory', durable: 'costgov_budgets_spend_changed' });
    expect(await linesOf('messaging_consumer_redeliveries_total')).toEqual([
      'messaging_consumer_redeliveries_total{messaging_system="memory",messaging_consumer_group_name="costgov_budgets_spend_changed"} 2',
    ]);
  });
});

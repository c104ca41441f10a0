import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '@costgov/config';
import { createLogger } from '@costgov/log';
import { startMetricsServer, type MetricsServer } from '@costgov/telemetry';
import { deleteStreams, eventually, freshDb, uniqueName } from '@costgov/testing';
import { startSystem, systemConfig, type RunningSystem } from '../src/system';
import { focusFile as monthFile } from '@costgov/testing';

/** A FOCUS export of the current month: one row of `cost` USD. */
const focusFile = (cost: number) =>
  monthFile([cost], { service: 'Amazon Elastic Compute Cloud', resourceId: () => 'i-1' });

/*
 * What /metrics shows after real traffic, under the names the alert rules and the dashboard in deploy/
 * use: the system's own bus (connectBus, as `npm start` makes it: in-process, or NATS when NATS_URL is
 * set), so consumer lag and redeliveries come from the bus that carries the events.
 */

const apiKey = 'cg_live_metricsnamestestkey0000000000000';
const namespace = uniqueName('metrics');
let system: RunningSystem;
let metricsServer: MetricsServer;
/** A webhook endpoint that takes every delivery. */
const hooks = http.createServer((req, res) => {
  req.resume();
  req.on('end', () => {
    res.statusCode = 204;
    res.end();
  });
});

beforeAll(async () => {
  const logger = createLogger('test', 'silent');
  const config = loadConfig(systemConfig, {
    PORT: '0',
    HOST: '127.0.0.1',
    DATA_DIR: 'memory',
    EVENT_NAMESPACE: namespace,
    ...(process.env.NATS_URL ? { NATS_URL: process.env.NATS_URL } : {}),
  });
  system = await startSystem(config, logger, {
    // The webhook endpoint listens on loopback, which the notifier refuses by default (SSRF).
    env: { GUARD_BOOTSTRAP_API_KEY: apiKey, WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true' },
    quietBootstrap: true,
    anyPorts: true,
    openDb: (service) => freshDb(service),
  });
  metricsServer = await startMetricsServer(0, { host: '127.0.0.1' });
  await new Promise<void>((resolve) => hooks.listen(0, '127.0.0.1', resolve));
});

afterAll(async () => {
  await metricsServer?.close();
  hooks.closeAllConnections();
  await new Promise((resolve) => hooks.close(resolve));
  await system?.stop();
  if (process.env.NATS_URL) await deleteStreams(process.env.NATS_URL, namespace);
});

async function call(method: string, path: string, body?: unknown) {
  const response = await fetch(`${system.url}${path}`, {
    method,
    headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await response.text();
  expect(response.status, `${method} ${path}: ${text}`).toBeLessThan(300);
  return JSON.parse(text).data;
}

const scrape = async () => (await fetch(`http://127.0.0.1:${metricsServer.port}/metrics`)).text();
/** The value of the one series of `name` whose labels are exactly `labels` (in any order), if present. */
const valueOf = (text: string, name: string, labels: Record<string, string>) => {
  for (const line of text.split('\n')) {
    const match = /^([a-z_]+)\{([^}]*)\} (\S+)$/.exec(line);
    if (!match || match[1] !== name) continue;
    const seen = Object.fromEntries([...match[2]!.matchAll(/([a-z_]+)="([^"]*)"/g)].map((m) => [m[1], m[2]]));
    if (JSON.stringify(Object.entries(seen).sort()) === JSON.stringify(Object.entries(labels).sort())) {
      return Number(match[3]);
    }
  }
  return undefined;
};

describe('metrics after traffic', () => {
  const system_ = () => (process.env.NATS_URL ? 'nats' : 'memory');
  /** A durable as the broker names its consumer (`nats consumer ls`): the namespace, then the durable. */
  const consumer = (durable: string) => `${namespace}_${durable}`;

  it('shows requests, gRPC calls, outbox backlog, consumer lag and webhook deliveries under their names', async () => {
    await call('POST', '/v1/guard/webhooks', {
      url: `http://127.0.0.1:${(hooks.address() as AddressInfo).port}/hooks`,
      events: ['budgets.budget.breached'],
    });
    const connection = await call('POST', '/v1/guard/connections', { name: 'metered', provider: 'aws' });
    const project = await call('POST', '/v1/guard/projects', {
      name: 'metered',
      connection_ids: [connection.id],
    });
    const budget = await call('POST', '/v1/guard/budgets', {
      project_id: project.id,
      name: 'metered monthly',
      amount: 100,
      currency: 'USD',
      period: 'monthly',
      thresholds: [100],
    });
    const upload = await fetch(`${system.url}/v1/guard/connections/${connection.id}/cost-data`, {
      method: 'POST',
      headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'text/csv' },
      body: focusFile(150),
    });
    expect(upload.status).toBe(200);
    await eventually(async () => {
      const violations = await call('GET', `/v1/guard/violations?budget_id=${budget.id}`);
      return violations.length === 1 ? true : undefined;
    }, 30_000);

    const text = await eventually(async () => {
      const scraped = await scrape();
      // Caught up: every outbox published (violations' follows budgets' events), budgets' durable handed
      // everything.
      const caughtUp =
        ['identity', 'costs', 'budgets', 'violations', 'scanner'].every(
          (service) => valueOf(scraped, 'outbox_oldest_event_age_seconds', { service }) === 0,
        ) &&
        valueOf(scraped, 'outbox_events_pending', { service: 'costs' }) === 0 &&
        valueOf(scraped, 'outbox_events_pending', { service: 'budgets' }) === 0 &&
        valueOf(scraped, 'messaging_consumer_lag_messages', {
          messaging_system: system_(),
          messaging_consumer_group_name: consumer('budgets_spend_changed'),
        }) === 0;
      const delivered = valueOf(scraped, 'webhook_deliveries_total', {
        outcome: 'success',
        trigger: 'scheduled',
      });
      return caughtUp && delivered === 1 ? scraped : undefined;
    }, 30_000);

    expect(
      valueOf(text, 'http_server_request_duration_seconds_count', {
        http_request_method: 'POST',
        http_route: '/v1/guard/connections/:id/cost-data',
        http_response_status_code: '200',
      }),
    ).toBe(1);
    expect(
      valueOf(text, 'http_server_request_duration_seconds_bucket', {
        le: '0.5',
        http_request_method: 'POST',
        http_route: '/v1/guard/budgets',
        http_response_status_code: '201',
      }),
    ).toBeGreaterThanOrEqual(0);
    expect(
      valueOf(text, 'rpc_server_call_duration_seconds_count', {
        rpc_system_name: 'grpc',
        rpc_method: 'costgov.costs.v1.CostDataService/UploadCostData',
        rpc_status_code: 'OK',
      }),
    ).toBe(1);
    for (const service of ['identity', 'costs', 'budgets', 'violations', 'scanner']) {
      expect(valueOf(text, 'outbox_oldest_event_age_seconds', { service }), service).toBe(0);
    }
    expect(
      valueOf(text, 'messaging_consumer_lag_messages', {
        messaging_system: system_(),
        messaging_consumer_group_name: consumer('violations_budget_events'),
      }),
    ).toBeGreaterThanOrEqual(0);
  }, 60_000);

  it('counts a redelivery per durable', async () => {
    // An event budgets cannot decode: its handler fails and the bus hands it over again after 1 s.
    await system.bus.publish({
      specversion: '1.0',
      id: uniqueName('evt_undecodable'),
      source: 'costs',
      type: 'costs.data.ingested',
      time: new Date().toISOString(),
      datacontenttype: 'application/json',
      data: { connectionId: 42, teamId: ['not', 'a', 'string'] },
    });
    await eventually(async () => {
      const count = valueOf(await scrape(), 'messaging_consumer_redeliveries_total', {
        messaging_system: system_(),
        messaging_consumer_group_name: consumer('budgets_spend_changed'),
      });
      return count !== undefined && count >= 1 ? true : undefined;
    }, 15_000);
  }, 30_000);
});

import { describe, expect, it } from 'vitest';
import {
  countRedelivery,
  countUncaughtError,
  metrics,
  observeHttpRequest,
  observeRpcCall,
  watchConsumerLag,
  watchOutbox,
} from './metrics';

/*
 * A process serves the shared metrics it records and no other: identity (gRPC, outbox, bus) shows no
 * HTTP histogram, the gateway no gRPC one. This file has a registry of its own (a module per test file),
 * so it starts as a process starts: before anything was recorded.
 */

const shared = [
  'http_server_request_duration_seconds',
  'rpc_server_call_duration_seconds',
  'outbox_events_pending',
  'outbox_oldest_event_age_seconds',
  'messaging_consumer_lag_messages',
  'messaging_consumer_redeliveries_total',
  'process_uncaught_errors_total',
];
const served = async () => {
  const text = await metrics.registry.metrics();
  return shared.filter((name) => text.includes(`# TYPE ${name} `));
};

describe('the metrics a process serves', () => {
  it('are only the Node.js and process metrics before it records anything', async () => {
    expect(await served()).toEqual([]);
    const names = metrics.registry.getMetricsAsArray().map((metric) => metric.name);
    expect(names).toContain('process_cpu_user_seconds_total');
    // Domain metrics are defined by the services that record them (budgets, notifier), not here.
    expect(names.filter((name) => name.startsWith('budget'))).toEqual([]);
  });

  it('gain each shared metric when the process first records it, or watches its source', async () => {
    const steps: Array<[() => unknown, string[]]> = [
      [
        () =>
          observeRpcCall(
            { service: 'costgov.identity.v1.IdentityService', method: 'Verify', code: 'OK' },
            0.001,
          ),
        ['rpc_server_call_duration_seconds'],
      ],
      [
        () => watchOutbox('identity', async () => ({ pending: 0, oldestAgeSeconds: 0 })),
        ['outbox_events_pending', 'outbox_oldest_event_age_seconds'],
      ],
      [() => watchConsumerLag(async () => []), ['messaging_consumer_lag_messages']],
      [
        () => countRedelivery({ system: 'nats', durable: 'costgov_identity_events' }),
        ['messaging_consumer_redeliveries_total'],
      ],
      [() => countUncaughtError('unhandled_rejection'), ['process_uncaught_errors_total']],
      [
        () => observeHttpRequest({ method: 'GET', route: '/v1/guard/projects', status: 200 }, 0.01),
        ['http_server_request_duration_seconds'],
      ],
    ];
    const expected: string[] = [];
    for (const [record, names] of steps) {
      record();
      expected.push(...names);
      expect((await served()).sort()).toEqual([...expected].sort());
    }
    // Recording again registers nothing twice (prom-client would throw on a second metric of a name).
    expect(() =>
      observeRpcCall({ service: 'costgov.identity.v1.IdentityService', method: 'Verify', code: 'OK' }, 0.001),
    ).not.toThrow();
  });
});

import { Writable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '@costgov/config';
import { createLogger } from '@costgov/log';
import { startTelemetry } from '@costgov/telemetry';
import { freshDb, testBus } from '@costgov/testing';
import { startSystem, systemConfig, type RunningSystem } from '../src/system';

// As instrument.ts does, without OTEL_EXPORTER_OTLP_ENDPOINT: no instrumentation, W3C context only.
delete process.env.OTEL_EXPORTER_OTLP_ENDPOINT;
const telemetry = startTelemetry('costgov');

const bootstrapKey = 'cg_live_tracecontexttestkey0000000000000';
const lines: Record<string, unknown>[] = [];
const sink = new Writable({
  write: (chunk, _enc, done) => {
    for (const line of chunk.toString().split('\n').filter(Boolean)) lines.push(JSON.parse(line) as never);
    done();
  },
});
let system: RunningSystem;

beforeAll(async () => {
  const logger = createLogger('costgov', 'debug', sink);
  const config = loadConfig(systemConfig, { PORT: '0', HOST: '127.0.0.1', DATA_DIR: 'memory' });
  system = await startSystem(config, logger, {
    env: { GUARD_BOOTSTRAP_API_KEY: bootstrapKey },
    quietBootstrap: true,
    anyPorts: true,
    openDb: (service) => freshDb(service),
    bus: await testBus(createLogger('test', 'silent')),
  });
});

afterAll(async () => {
  await system?.stop();
  await telemetry.shutdown();
});

/** The access log line of `requestId` and the line budgets' gRPC server wrote for the call it made. */
async function linesOf(requestId: string) {
  const deadline = Date.now() + 5_000;
  for (;;) {
    const access = lines.find((line) => line.request_id === requestId && line.msg === 'request');
    const backend = lines.find(
      (line) => line.request_id === requestId && line.msg === 'rpc call' && line.service === 'budgets',
    );
    if ((access && backend) || Date.now() > deadline) return { access, backend };
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

describe('trace context without an exporter', () => {
  it("continues the caller's traceparent in the gateway's and the backend's log lines", async () => {
    const traceId = '4bf92f3577b34da6a3ce929d0e0e4736';
    const requestId = 'req_tracecontexttest01';
    const response = await fetch(`${system.url}/v1/guard/projects`, {
      headers: {
        authorization: `Bearer ${bootstrapKey}`,
        'x-request-id': requestId,
        traceparent: `00-${traceId}-00f067aa0ba902b7-01`,
      },
    });
    expect(response.status).toBe(200);
    const { access, backend } = await linesOf(requestId);
    expect(access).toMatchObject({ trace_id: traceId, status: 200 });
    expect(backend).toMatchObject({
      trace_id: traceId,
      method: '/costgov.budgets.v1.ProjectsService/ListProjects',
    });
  });

  it('starts a trace per request without one, and passes it to the backend', async () => {
    const requestId = 'req_tracecontexttest02';
    const response = await fetch(`${system.url}/v1/guard/projects`, {
      headers: { authorization: `Bearer ${bootstrapKey}`, 'x-request-id': requestId },
    });
    expect(response.status).toBe(200);
    const { access, backend } = await linesOf(requestId);
    expect(access?.trace_id).toMatch(/^[0-9a-f]{32}$/);
    expect(backend?.trace_id).toBe(access?.trace_id);
  });
});

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '@costgov/config';
import { createLogger } from '@costgov/log';
import { freePort } from '@costgov/testing';
import { gatewayConfig } from '../src/config';
import { startGateway, type RunningGateway } from '../src/server';

const logger = createLogger('test', 'silent');

describe('gateway readiness with its backends down', () => {
  let gateway: RunningGateway;
  let base = '';

  beforeAll(async () => {
    // Nothing listens on these ports: every backend is unreachable.
    const [identity, budgets, violations, costs, scanner, notifier] = await Promise.all(
      Array.from({ length: 6 }, freePort),
    );
    const config = loadConfig(gatewayConfig, {
      PORT: '0',
      HOST: '127.0.0.1',
      IDENTITY_ADDR: `127.0.0.1:${identity}`,
      BUDGETS_ADDR: `127.0.0.1:${budgets}`,
      VIOLATIONS_ADDR: `127.0.0.1:${violations}`,
      COSTS_ADDR: `127.0.0.1:${costs}`,
      SCANNER_ADDR: `127.0.0.1:${scanner}`,
      NOTIFIER_ADDR: `127.0.0.1:${notifier}`,
      SHUTDOWN_DRAIN_MS: '1500',
    });
    gateway = await startGateway(config, logger);
    base = `http://127.0.0.1:${gateway.port}`;
  });

  afterAll(() => gateway.stop());

  it('stays ready (200) and reports each unreachable backend as down', async () => {
    const response = await fetch(`${base}/readyz`);
    expect(response.status).toBe(200);
    expect(await response.json()).toEqual({
      status: 'ready',
      backends: {
        identity: false,
        budgets: false,
        violations: false,
        costs: false,
        scanner: false,
        notifier: false,
      },
    });
  });

  it('answers a request that needs a backend with 503 service_unavailable meanwhile', async () => {
    const response = await fetch(`${base}/v1/guard/projects`, {
      headers: { authorization: 'Bearer cg_live_readinesstestreadinesstest0000000' },
    });
    expect(response.status).toBe(503);
    expect(response.headers.get('retry-after')).toBe('1');
    expect(((await response.json()) as { error: { code: string } }).error.code).toBe('service_unavailable');
  });

  it('once stopping, fails readiness with draining for the drain period while still serving', async () => {
    const stopped = gateway.stop();
    const readyz = await fetch(`${base}/readyz`);
    expect(readyz.status).toBe(503);
    expect(((await readyz.json()) as { status: string }).status).toBe('draining');
    const document = await fetch(`${base}/v1/openapi.json`);
    expect(document.status).toBe(200);
    await stopped;
    await expect(fetch(`${base}/healthz`)).rejects.toThrow();
  });
});

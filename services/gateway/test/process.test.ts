import { createServer, type Server } from 'node:net';
import { afterAll, describe, expect, it } from 'vitest';
import { freePort, startProcess, type Proc } from '@costgov/testing';

const procs: Proc[] = [];
afterAll(() => Promise.all(procs.map((proc) => proc.stop())));

const exitOf = (proc: Proc): Promise<number | null> =>
  proc.child.exitCode !== null
    ? Promise.resolve(proc.child.exitCode)
    : new Promise((resolve) => proc.child.once('exit', (code) => resolve(code)));

/** Backends that are not there: the gateway's own behaviour does not need them. */
async function gatewayEnv(extra: NodeJS.ProcessEnv): Promise<NodeJS.ProcessEnv> {
  const [identity, budgets, violations, costs, scanner, metrics] = await Promise.all(
    Array.from({ length: 6 }, freePort),
  );
  return {
    HOST: '127.0.0.1',
    METRICS_PORT: `${metrics}`,
    IDENTITY_ADDR: `127.0.0.1:${identity}`,
    BUDGETS_ADDR: `127.0.0.1:${budgets}`,
    VIOLATIONS_ADDR: `127.0.0.1:${violations}`,
    COSTS_ADDR: `127.0.0.1:${costs}`,
    SCANNER_ADDR: `127.0.0.1:${scanner}`,
    NATS_URL: '',
    REDIS_URL: '',
    LOG_LEVEL: 'info',
    ...extra,
  };
}

async function until<T>(check: () => Promise<T | undefined>, proc: Proc, timeoutMs = 60_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check().catch(() => undefined);
    if (value !== undefined) return value;
    if (proc.child.exitCode !== null) throw new Error(`${proc.name} exited:\n${proc.output()}`);
    if (Date.now() > deadline) throw new Error(`timed out:\n${proc.output()}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

describe('the gateway process', () => {
  it('exits non-zero with a clear message when its port is taken', { timeout: 120_000 }, async () => {
    const holder: Server = await new Promise((resolve) => {
      const server = createServer();
      server.listen(0, '127.0.0.1', () => resolve(server));
    });
    const port = (holder.address() as { port: number }).port;
    try {
      const proc = startProcess(
        'gateway',
        'services/gateway/src/main.ts',
        await gatewayEnv({ PORT: `${port}` }),
      );
      procs.push(proc);
      expect(await exitOf(proc)).toBe(1);
      expect(proc.output()).toContain(`Cannot listen on 127.0.0.1:${port}: the address is already in use`);
      expect(proc.output()).not.toMatch(/"msg":"gateway listening"/);
    } finally {
      await new Promise<void>((resolve) => holder.close(() => resolve()));
    }
  });

  it(
    'on SIGTERM answers /readyz 503 draining while still serving, then exits 0',
    { timeout: 120_000 },
    async () => {
      const port = await freePort();
      const proc = startProcess(
        'gateway',
        'services/gateway/src/main.ts',
        await gatewayEnv({ PORT: `${port}`, SHUTDOWN_DRAIN_MS: '3000' }),
      );
      procs.push(proc);
      const base = `http://127.0.0.1:${port}`;
      await until(async () => ((await fetch(`${base}/readyz`)).status === 200 ? true : undefined), proc);

      const exited = exitOf(proc);
      proc.child.kill('SIGTERM');
      const draining = await until(
        async () => {
          const response = await fetch(`${base}/readyz`);
          return response.status === 503 ? ((await response.json()) as { status: string }) : undefined;
        },
        proc,
        2_000,
      );
      expect(draining.status).toBe('draining');
      const document = await fetch(`${base}/v1/openapi.json`);
      expect(document.status).toBe(200);
      expect((await fetch(`${base}/healthz`)).status).toBe(200);
      expect(await exited).toBe(0);
      await expect(fetch(`${base}/healthz`)).rejects.toThrow();
    },
  );
});

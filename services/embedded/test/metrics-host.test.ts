import { networkInterfaces } from 'node:os';
import { afterEach, describe, expect, it } from 'vitest';
import { freePort, startProcess, type Proc } from '@costgov/testing';

/**
 * A non-loopback IPv4 address of this machine: a listener on 0.0.0.0 answers there, one on 127.0.0.1
 * does not. Without one (a sandbox with loopback only) the difference cannot be seen.
 */
const external = Object.values(networkInterfaces())
  .flat()
  .find((nic) => nic?.family === 'IPv4' && !nic.internal)?.address;

/** The three composition roots that serve /metrics, on embedded storage and bus, with free ports. */
const roots: Record<string, { entry: string; env: () => Promise<NodeJS.ProcessEnv> }> = {
  'npm start': {
    entry: 'services/embedded/src/main.ts',
    env: async () => {
      const [port, identity, budgets, violations, costs, scanner, notifier] = await Promise.all(
        Array.from({ length: 7 }, freePort),
      );
      return {
        PORT: `${port}`,
        HOST: '127.0.0.1',
        IDENTITY_ADDR: `127.0.0.1:${identity}`,
        BUDGETS_ADDR: `127.0.0.1:${budgets}`,
        VIOLATIONS_ADDR: `127.0.0.1:${violations}`,
        COSTS_ADDR: `127.0.0.1:${costs}`,
        SCANNER_ADDR: `127.0.0.1:${scanner}`,
        NOTIFIER_ADDR: `127.0.0.1:${notifier}`,
        GUARD_BOOTSTRAP_API_KEY: '',
      };
    },
  },
  gateway: {
    entry: 'services/gateway/src/main.ts',
    // Backends that are not there: the metrics listener does not need them.
    env: async () => {
      const [port, backend] = await Promise.all([freePort(), freePort()]);
      const addr = `127.0.0.1:${backend}`;
      return {
        PORT: `${port}`,
        HOST: '127.0.0.1',
        ...Object.fromEntries(
          ['IDENTITY', 'BUDGETS', 'VIOLATIONS', 'COSTS', 'SCANNER', 'NOTIFIER'].map((name) => [
            `${name}_ADDR`,
            addr,
          ]),
        ),
      };
    },
  },
  'budgets on its own': {
    entry: 'services/budgets/src/main.ts',
    env: async () => ({ GRPC_HOST: '127.0.0.1', GRPC_PORT: `${await freePort()}` }),
  },
};

const answers = (host: string, port: number): Promise<boolean> =>
  fetch(`http://${host}:${port}/healthz`, { signal: AbortSignal.timeout(2_000) }).then(
    (response) => response.ok,
    () => false,
  );

let proc: Proc | undefined;
afterEach(async () => {
  await proc?.stop();
  proc = undefined;
});

describe.skipIf(!external)('METRICS_HOST: where /metrics and /healthz listen', () => {
  it.each([
    ['npm start', undefined, { loopback: true, external: false }],
    ['gateway', undefined, { loopback: true, external: false }],
    ['gateway', '0.0.0.0', { loopback: true, external: true }],
    ['budgets on its own', undefined, { loopback: true, external: false }],
    ['budgets on its own', 'external', { loopback: false, external: true }],
  ] as const)(
    '%s with METRICS_HOST=%s answers %o',
    { timeout: 150_000 },
    async (root, metricsHost, expected) => {
      const metricsPort = await freePort();
      proc = startProcess(root, roots[root]!.entry, {
        ...(await roots[root]!.env()),
        METRICS_PORT: `${metricsPort}`,
        // undefined: unset (spawn leaves it out), so the default applies.
        METRICS_HOST: metricsHost === 'external' ? external : metricsHost,
        DATA_DIR: 'memory',
        DATABASE_URL: '',
        NATS_URL: '',
        REDIS_URL: '',
      });
      // The address it must answer on tells when it has bound; then the other is asked.
      const bound = expected.loopback ? '127.0.0.1' : external!;
      const deadline = Date.now() + 120_000;
      while (!(await answers(bound, metricsPort))) {
        if (proc.child.exitCode !== null || Date.now() > deadline) throw new Error(proc.output());
        await new Promise((resolve) => setTimeout(resolve, 200));
      }
      expect({
        loopback: await answers('127.0.0.1', metricsPort),
        external: await answers(external!, metricsPort),
      }).toEqual(expected);
    },
  );
});

import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import { freePort } from '@costgov/testing';

export const repoRoot = path.resolve(__dirname, '../../..');

export interface Proc {
  name: string;
  child: ChildProcess;
  output: () => string;
  stop(): Promise<void>;
}

/** Starts an entry point as its own Node process, the way `npm run start:<name>` (and the e2e test) does. */
export function startProcess(name: string, entry: string, env: NodeJS.ProcessEnv): Proc {
  // BENCH_NODE_ARGS (e.g. '--cpu-prof --cpu-prof-dir=/tmp/prof') lets a run profile the processes it starts.
  const nodeArgs = (process.env.BENCH_NODE_ARGS ?? '').split(' ').filter(Boolean);
  const child = spawn(process.execPath, [...nodeArgs, '--import', 'tsx', entry], {
    cwd: repoRoot,
    env: { ...process.env, LOG_LEVEL: 'warn', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout!.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr!.on('data', (chunk: Buffer) => (output += chunk.toString()));
  return {
    name,
    child,
    output: () => output,
    stop: () =>
      new Promise((resolve) => {
        if (child.exitCode !== null || child.signalCode !== null) return resolve();
        const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
        child.once('exit', () => {
          clearTimeout(timer);
          resolve();
        });
        child.kill('SIGTERM');
      }),
  };
}

/** Polls `<url>/readyz` until it answers 200 with every backend up; fails early when a process exits. */
export async function waitForReady(url: string, procs: Proc[], timeoutMs = 60_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    for (const proc of procs) {
      if (proc.child.exitCode !== null)
        throw new Error(`${proc.name} exited (${proc.child.exitCode}):\n${proc.output()}`);
    }
    try {
      const response = await fetch(`${url}/readyz`);
      const body = (await response.json()) as { backends: Record<string, boolean> };
      if (response.ok && Object.values(body.backends).every(Boolean)) return;
    } catch {
      // not listening yet
    }
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
  throw new Error(
    `not ready within ${timeoutMs} ms:\n${procs.map((p) => `--- ${p.name}\n${p.output()}`).join('\n')}`,
  );
}

/** Where the backends of a full path listen, so that more gateways can be pointed at them. */
export interface Backends {
  databaseUrl: string;
  namespace: string;
  /** host:port of identity's gRPC server. */
  identity: string;
  budgets: string;
  violations: string;
}

export interface Gateway {
  name: string;
  url: string;
  /** The gateway's Prometheus endpoint. */
  metricsUrl: string;
  proc: Proc;
}

async function gatewayProcess(
  name: string,
  backends: Backends,
  env: NodeJS.ProcessEnv,
  procs: Proc[],
): Promise<Gateway> {
  const [port, metricsPort] = await Promise.all([freePort(), freePort()]);
  const proc = startProcess(name, 'services/gateway/src/main.ts', {
    DATABASE_URL: backends.databaseUrl,
    NATS_URL: process.env.NATS_URL,
    EVENT_NAMESPACE: backends.namespace,
    PORT: `${port}`,
    METRICS_PORT: `${metricsPort}`,
    IDENTITY_ADDR: backends.identity,
    BUDGETS_ADDR: backends.budgets,
    VIOLATIONS_ADDR: backends.violations,
    ...env,
  });
  procs.push(proc);
  return {
    name,
    url: `http://127.0.0.1:${port}`,
    metricsUrl: `http://127.0.0.1:${metricsPort}/metrics`,
    proc,
  };
}

/** identity, budgets, violations and the gateway, each its own process, as in services/all/test/e2e.test.ts. */
export async function startFullPath(
  env: { databaseUrl: string; namespace: string; apiKey: string },
  procs: Proc[],
): Promise<{ gateway: Gateway; backends: Backends }> {
  const [identity, budgets, violations, ...metrics] = await Promise.all(Array.from({ length: 6 }, freePort));
  const common = {
    DATABASE_URL: env.databaseUrl,
    NATS_URL: process.env.NATS_URL,
    EVENT_NAMESPACE: env.namespace,
  };
  procs.push(
    startProcess('identity', 'services/identity/src/main.ts', {
      ...common,
      GRPC_PORT: `${identity}`,
      METRICS_PORT: `${metrics[0]}`,
      GUARD_BOOTSTRAP_API_KEY: env.apiKey,
    }),
    startProcess('budgets', 'services/budgets/src/main.ts', {
      ...common,
      GRPC_PORT: `${budgets}`,
      METRICS_PORT: `${metrics[1]}`,
    }),
    startProcess('violations', 'services/violations/src/main.ts', {
      ...common,
      GRPC_PORT: `${violations}`,
      METRICS_PORT: `${metrics[2]}`,
    }),
  );
  const backends: Backends = {
    databaseUrl: env.databaseUrl,
    namespace: env.namespace,
    identity: `127.0.0.1:${identity}`,
    budgets: `127.0.0.1:${budgets}`,
    violations: `127.0.0.1:${violations}`,
  };
  // The team's rate limits would answer 429 within a second of load; their cost is measured separately.
  const gateway = await gatewayProcess('gateway', backends, { RATE_LIMIT: 'off' }, procs);
  await waitForReady(gateway.url, procs);
  return { gateway, backends };
}

/** One more gateway process on running backends, e.g. with other rate limit settings. */
export async function startGateway(
  name: string,
  backends: Backends,
  env: NodeJS.ProcessEnv,
  procs: Proc[],
): Promise<Gateway> {
  const gateway = await gatewayProcess(name, backends, env, procs);
  await waitForReady(gateway.url, procs);
  return gateway;
}

/** The single-process express + pg handler of libs/bench/src/baseline.ts. */
export async function startBaseline(
  env: { databaseUrl: string; apiKey: string; teamId: string },
  procs: Proc[],
): Promise<string> {
  const port = await freePort();
  const proc = startProcess('baseline', 'libs/bench/src/baseline.ts', {
    DATABASE_URL: env.databaseUrl,
    PORT: `${port}`,
    BENCH_API_KEY: env.apiKey,
    BENCH_TEAM_ID: env.teamId,
  });
  procs.push(proc);
  const url = `http://127.0.0.1:${port}`;
  await waitForReady(url, [proc]);
  return url;
}

import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import { freePort } from './fresh';

export const repoRoot = path.resolve(__dirname, '../../..');

/** A process a test or benchmark started, with everything it printed. */
export interface Proc {
  name: string;
  child: ChildProcess;
  output: () => string;
  /** SIGTERM, then SIGKILL after 10 s; resolves once it has exited (at once if it already has). */
  stop(): Promise<void>;
}

export function startCommand(name: string, command: string, args: string[], env?: NodeJS.ProcessEnv): Proc {
  const child = spawn(command, args, { cwd: repoRoot, env, stdio: ['ignore', 'pipe', 'pipe'] });
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

/**
 * Starts a TypeScript entry point (`services/<name>/src/main.ts`) as its own Node process, the way
 * `npm run start:<name>` does. `nodeArgs` go before the entry (e.g. `--cpu-prof`).
 */
export function startProcess(
  name: string,
  entry: string,
  env: NodeJS.ProcessEnv,
  nodeArgs: string[] = [],
): Proc {
  return startCommand(name, process.execPath, [...nodeArgs, '--import', 'tsx', entry], {
    ...process.env,
    LOG_LEVEL: 'warn',
    ...env,
  });
}

/** Polls `<url>/readyz` until it answers 200 with every backend up; fails early when a process exits. */
export async function waitForReady(url: string, procs: Proc[], timeoutMs = 120_000): Promise<void> {
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

/** Where the backends of a topology listen, so that gateways can be pointed at them. */
export interface Backends {
  /** Environment every process of the topology shares (database, NATS, namespace). */
  env: NodeJS.ProcessEnv;
  identity: string;
  budgets: string;
  violations: string;
  costs: string;
  scanner: string;
  notifier: string;
  /** Each service's Prometheus endpoint, by service name. */
  metricsUrls: Record<string, string>;
}

type Addresses = Pick<Backends, 'identity' | 'budgets' | 'costs'>;

/**
 * The other services' addresses a backend reads (budgets asks identity and costs; costs asks budgets
 * for budget periods at uploads; the scanner, API or worker, asks all three), so a test that starts one
 * again or adds a worker gives it what startBackends did.
 */
export function dependencyEnv(service: string, at: Addresses): NodeJS.ProcessEnv {
  switch (service) {
    case 'costs':
      return { BUDGETS_ADDR: at.budgets };
    case 'budgets':
      return { IDENTITY_ADDR: at.identity, COSTS_ADDR: at.costs };
    case 'scanner':
      return { IDENTITY_ADDR: at.identity, COSTS_ADDR: at.costs, BUDGETS_ADDR: at.budgets };
    // The notifier only consumes events: it calls no other service.
    case 'notifier':
    default:
      return {};
  }
}

/**
 * identity, costs, budgets, violations, scanner and notifier, each as its own process on free loopback ports: the production
 * topology, as the end-to-end tests and the benchmark run it.
 */
export async function startBackends(
  env: NodeJS.ProcessEnv & { GUARD_BOOTSTRAP_API_KEY: string },
  procs: Proc[],
  nodeArgs: string[] = [],
): Promise<Backends> {
  const [identity, budgets, violations, costs, scanner, notifier, ...metrics] = await Promise.all(
    Array.from({ length: 12 }, freePort),
  );
  const { GUARD_BOOTSTRAP_API_KEY, ...shared } = env;
  const service = (name: string, grpcPort: number, metricsPort: number, extra: NodeJS.ProcessEnv = {}) =>
    startProcess(
      name,
      `services/${name}/src/main.ts`,
      { ...shared, GRPC_PORT: `${grpcPort}`, METRICS_PORT: `${metricsPort}`, ...extra },
      nodeArgs,
    );
  const at = {
    identity: `127.0.0.1:${identity}`,
    budgets: `127.0.0.1:${budgets}`,
    costs: `127.0.0.1:${costs}`,
  };
  procs.push(
    service('identity', identity!, metrics[0]!, { GUARD_BOOTSTRAP_API_KEY }),
    service('costs', costs!, metrics[3]!, dependencyEnv('costs', at)),
    service('budgets', budgets!, metrics[1]!, dependencyEnv('budgets', at)),
    service('violations', violations!, metrics[2]!),
    service('scanner', scanner!, metrics[4]!, dependencyEnv('scanner', at)),
    service('notifier', notifier!, metrics[5]!, dependencyEnv('notifier', at)),
  );
  return {
    env: shared,
    identity: `127.0.0.1:${identity}`,
    budgets: `127.0.0.1:${budgets}`,
    violations: `127.0.0.1:${violations}`,
    costs: `127.0.0.1:${costs}`,
    scanner: `127.0.0.1:${scanner}`,
    notifier: `127.0.0.1:${notifier}`,
    metricsUrls: Object.fromEntries(
      ['identity', 'budgets', 'violations', 'costs', 'scanner', 'notifier'].map((name, i) => [
        name,
        `http://127.0.0.1:${metrics[i]}/metrics`,
      ]),
    ),
  };
}

/**
 * One more process of a service beside `startBackends`' topology (a second notifier, a scanner worker),
 * on gRPC and metrics ports of its own so replicas on one machine do not collide.
 */
export async function startReplica(
  name: string,
  entry: string,
  env: NodeJS.ProcessEnv,
  procs: Proc[],
): Promise<Proc> {
  const [grpcPort, metricsPort] = await Promise.all([freePort(), freePort()]);
  const proc = startProcess(name, entry, {
    ...env,
    GRPC_PORT: `${grpcPort}`,
    METRICS_PORT: `${metricsPort}`,
  });
  procs.push(proc);
  return proc;
}

export interface GatewayProcess {
  name: string;
  url: string;
  /** Its Prometheus endpoint. */
  metricsUrl: string;
  proc: Proc;
}

/**
 * A gateway process on running backends, waited for until it and its backends are ready. Its ports are
 * free when picked, but an outgoing connection of any process may take one (they share the ephemeral
 * range) before the gateway binds it: a gateway that exits because its address is in use is started
 * again on other ports, at most three times.
 */
export async function startGatewayProcess(
  name: string,
  backends: Backends,
  env: NodeJS.ProcessEnv,
  procs: Proc[],
  nodeArgs: string[] = [],
): Promise<GatewayProcess> {
  for (let attempt = 1; ; attempt++) {
    const [port, metricsPort] = await Promise.all([freePort(), freePort()]);
    const proc = startProcess(
      name,
      'services/gateway/src/main.ts',
      {
        ...backends.env,
        PORT: `${port}`,
        METRICS_PORT: `${metricsPort}`,
        IDENTITY_ADDR: backends.identity,
        BUDGETS_ADDR: backends.budgets,
        VIOLATIONS_ADDR: backends.violations,
        COSTS_ADDR: backends.costs,
        SCANNER_ADDR: backends.scanner,
        NOTIFIER_ADDR: backends.notifier,
        ...env,
      },
      nodeArgs,
    );
    procs.push(proc);
    const gateway = {
      name,
      url: `http://127.0.0.1:${port}`,
      metricsUrl: `http://127.0.0.1:${metricsPort}/metrics`,
      proc,
    };
    try {
      await waitForReady(gateway.url, procs);
      return gateway;
    } catch (error) {
      const taken = proc.child.exitCode !== null && /address is already in use/.test(proc.output());
      if (!taken || attempt >= 3) throw error;
      procs.splice(procs.indexOf(proc), 1);
    }
  }
}

/** kill -9 (or `signal`) of the running process called `name`, as a crash or an OOM kill would. */
export async function killProcess(
  procs: Proc[],
  name: string,
  signal: NodeJS.Signals = 'SIGKILL',
): Promise<void> {
  const proc = procs.find((p) => p.name === name && p.child.exitCode === null && p.child.signalCode === null);
  if (!proc) throw new Error(`no running process called ${name}`);
  const exited = new Promise((resolve) => proc.child.once('exit', resolve));
  proc.child.kill(signal);
  await exited;
}

/**
 * Starts a stopped backend of `startBackends`' topology again, with its environment and on the gRPC port
 * it had, and waits until the gateway at `gatewayUrl` reports every backend ready.
 */
export async function restartBackend(
  name: 'identity' | 'budgets' | 'violations' | 'costs' | 'scanner' | 'notifier',
  backends: Backends,
  procs: Proc[],
  gatewayUrl: string,
  options: { env?: NodeJS.ProcessEnv; timeoutMs?: number } = {},
): Promise<Proc> {
  const proc = startProcess(name, `services/${name}/src/main.ts`, {
    ...backends.env,
    GRPC_PORT: backends[name].split(':')[1]!,
    METRICS_PORT: `${await freePort()}`,
    ...dependencyEnv(name, backends),
    ...options.env,
  });
  procs.push(proc);
  await waitForReady(gatewayUrl, [proc], options.timeoutMs);
  return proc;
}

import {
  freePort,
  startBackends,
  startGatewayProcess,
  startProcess,
  waitForReady,
  type Backends,
  type GatewayProcess,
  type Proc,
} from '@costgov/testing';

export type { Backends, Proc };
export type Gateway = GatewayProcess;

/** BENCH_NODE_ARGS (e.g. '--cpu-prof --cpu-prof-dir=/tmp/prof') lets a run profile the processes it starts. */
const nodeArgs = (process.env.BENCH_NODE_ARGS ?? '').split(' ').filter(Boolean);

/** identity, budgets, violations and the gateway, each its own process, as in services/embedded/test/e2e.test.ts. */
export async function startFullPath(
  env: { databaseUrl: string; namespace: string; apiKey: string; extra?: NodeJS.ProcessEnv },
  procs: Proc[],
): Promise<{ gateway: Gateway; backends: Backends }> {
  const backends = await startBackends(
    {
      DATABASE_URL: env.databaseUrl,
      NATS_URL: process.env.NATS_URL,
      EVENT_NAMESPACE: env.namespace,
      GUARD_BOOTSTRAP_API_KEY: env.apiKey,
      ...env.extra,
    },
    procs,
    nodeArgs,
  );
  // The team's rate limits would answer 429 within a second of load; their cost is measured separately.
  const gateway = await startGateway('gateway', backends, { RATE_LIMIT: 'off' }, procs);
  return { gateway, backends };
}

/** One more gateway process on running backends, e.g. with other rate limit settings. */
export function startGateway(
  name: string,
  backends: Backends,
  env: NodeJS.ProcessEnv,
  procs: Proc[],
): Promise<Gateway> {
  return startGatewayProcess(name, backends, env, procs, nodeArgs);
}

/** The single-process express + pg handler of libs/bench/src/baseline.ts. */
export async function startBaseline(
  env: { databaseUrl: string; apiKey: string; teamId: string },
  procs: Proc[],
): Promise<string> {
  const port = await freePort();
  const proc = startProcess(
    'baseline',
    'libs/bench/src/baseline.ts',
    { DATABASE_URL: env.databaseUrl, PORT: `${port}`, BENCH_API_KEY: env.apiKey, BENCH_TEAM_ID: env.teamId },
    nodeArgs,
  );
  procs.push(proc);
  const url = `http://127.0.0.1:${port}`;
  await waitForReady(url, [proc]);
  return url;
}

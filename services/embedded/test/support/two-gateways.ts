import { expect } from 'vitest';
import { identity } from '@costgov/contracts';
import { createRpcClient } from '@costgov/rpc';
import {
  createTestDatabase,
  deleteStreams,
  startBackends,
  startGatewayProcess,
  uniqueName,
  type GatewayProcess,
  type Proc,
} from '@costgov/testing';

/** Two gateway processes on backends of their own (a database and event streams of this test's own). */
export interface TwoGateways {
  gateways: [GatewayProcess, GatewayProcess];
  /** A new API key of the bootstrap team, with read and write scopes. */
  newKey(): Promise<string>;
  stop(): Promise<void>;
}

/**
 * Starts identity, budgets, violations, costs and the scanner, each its own process, on a fresh database
 * (`<prefix>_...`) and stream namespace, and two gateway processes with `gatewayEnv` (their limits).
 */
export async function startTwoGateways(prefix: string, gatewayEnv: NodeJS.ProcessEnv): Promise<TwoGateways> {
  const namespace = uniqueName(prefix);
  const database = await createTestDatabase(prefix);
  const procs: Proc[] = [];
  let identityClient: ReturnType<typeof createRpcClient<typeof identity.IdentityService>> | undefined;
  const stop = async () => {
    identityClient?.close();
    await Promise.all(procs.map((p) => p.stop()));
    await database.drop();
    if (process.env.NATS_URL) await deleteStreams(process.env.NATS_URL, namespace);
  };
  try {
    const backends = await startBackends(
      {
        DATABASE_URL: database.url,
        NATS_URL: process.env.NATS_URL,
        EVENT_NAMESPACE: namespace,
        GUARD_BOOTSTRAP_API_KEY: `cg_live_${prefix}twogatewaysbootstrap`.padEnd(40, '0'),
      },
      procs,
    );
    const gateways = (await Promise.all([
      startGatewayProcess('gateway-a', backends, gatewayEnv, procs),
      startGatewayProcess('gateway-b', backends, gatewayEnv, procs),
    ])) as [GatewayProcess, GatewayProcess];
    const client = createRpcClient(identity.IdentityService, backends.identity);
    identityClient = client;
    const teamId = (await client.listTeams({})).teams[0]!.id;
    return {
      gateways,
      newKey: async () =>
        (await client.createApiKey({ name: prefix, scopes: ['guard:read', 'guard:write'] }, { teamId }))
          .secret,
      stop,
    };
  } catch (error) {
    await stop();
    throw error;
  }
}

/**
 * 200 reads with one key, alternately through each gateway: one bucket shared by both lets 120 through
 * (it holds 120 and refills 2 a second), two buckets of their own would let all 200 through.
 */
export async function expectOneSharedBucket(gateways: readonly GatewayProcess[], key: string): Promise<void> {
  const started = Date.now();
  let passed = 0;
  for (let i = 0; i < 200; i++) {
    const response = await fetch(`${gateways[i % 2]!.url}/v1/guard/projects?per_page=1`, {
      headers: { authorization: `Bearer ${key}` },
    });
    if (response.status === 200) passed++;
    else expect(response.status).toBe(429);
  }
  const refilled = Math.ceil(((Date.now() - started) / 1000) * 2);
  expect(passed).toBeGreaterThanOrEqual(120);
  expect(passed).toBeLessThanOrEqual(120 + refilled + 1);
}

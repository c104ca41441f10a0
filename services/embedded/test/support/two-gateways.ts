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

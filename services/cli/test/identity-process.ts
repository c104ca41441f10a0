import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { identity } from '@costgov/contracts';
import { checkHealth, createRpcClient } from '@costgov/rpc';
import { freePort, startCommand } from '@costgov/testing';

export { repoRoot } from '@costgov/testing';

export interface IdentityProcess {
  /** host:port of its gRPC server. */
  address: string;
  /** The team `default` it created on its first start. */
  defaultTeamId: string;
  /** What it printed: the bootstrap message on stdout, logs on stderr. */
  output(): string;
  stop(): Promise<void>;
}

/**
 * The identity service as its own process, the way `npm run start:identity` runs it, on free loopback
 * ports with an embedded database (PGlite in a temporary directory) and the in-process bus. The
 * variables that would point it at real infrastructure, or choose its bootstrap key, are removed.
 */
export async function startIdentity(timeoutMs = 80_000): Promise<IdentityProcess> {
  const dataDir = await mkdtemp(path.join(tmpdir(), 'costgov-cli-test-'));
  const [grpcPort, metricsPort] = [await freePort(), await freePort()];
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    GRPC_HOST: '127.0.0.1',
    GRPC_PORT: String(grpcPort),
    METRICS_PORT: String(metricsPort),
    DATA_DIR: dataDir,
    LOG_LEVEL: 'warn',
  };
  for (const name of ['DATABASE_URL', 'NATS_URL', 'REDIS_URL', 'GUARD_BOOTSTRAP_API_KEY']) delete env[name];

  const proc = startCommand(
    'identity',
    process.execPath,
    ['--import', 'tsx', 'services/identity/src/main.ts'],
    env,
  );
  const { child } = proc;
  const stop = async () => {
    await proc.stop();
    await rm(dataDir, { recursive: true, force: true });
  };

  const address = `127.0.0.1:${grpcPort}`;
  const deadline = Date.now() + timeoutMs;
  const fail = async (reason: string): Promise<never> => {
    await stop();
    throw new Error(`identity ${reason}:\n${proc.output()}`);
  };
  for (;;) {
    if (child.exitCode !== null) await fail(`exited (${child.exitCode}) before serving`);
    if (
      await checkHealth(address).then(
        (status) => status === 'SERVING',
        () => false,
      )
    )
      break;
    if (Date.now() > deadline) await fail(`did not serve within ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 200));
  }

  // The port was free a moment before the process bound it; make sure the server answering is this one.
  const defaultTeamId = /Created team 'default' \((\w+)\)/.exec(proc.output())?.[1];
  if (!defaultTeamId) return fail('serves but did not print its bootstrap team');
  const client = createRpcClient(identity.IdentityService, address);
  const team = await client.getTeam({ id: defaultTeamId }).catch(() => undefined);
  client.close();
  if (team?.name !== 'default') return fail(`is not the server answering on ${address}`);

  return { address, defaultTeamId, output: proc.output, stop };
}

import { identity, scim } from '@costgov/contracts';
import type { Db } from '@costgov/db';
import { createLogger } from '@costgov/log';
import { createRpcClient, type RpcClient } from '@costgov/rpc';
import { startService } from '@costgov/runtime';
import { freshDb, testBus } from '@costgov/testing';
import { identityModule } from '../src/module';

/** identity on a fresh database and an in-process bus, with a client of its IdentityService. */
export interface IdentityUnderTest {
  db: Db;
  address: string;
  client: RpcClient<typeof identity.IdentityService>;
  stop(): Promise<void>;
}

/** Starts identity (`now` as its clock, when given); the bootstrap team is made but nothing is printed. */
export async function startIdentity(now?: () => Date): Promise<IdentityUnderTest> {
  const logger = createLogger('test', 'silent');
  const bus = await testBus(logger);
  const db = await freshDb('identity');
  const service = await startService(identityModule({ onBootstrap: () => undefined }), {
    logger,
    bus,
    env: {},
    openDb: async () => db,
    dataDir: 'memory',
    grpcAddress: '127.0.0.1:0',
    ...(now ? { now } : {}),
  });
  const address = `127.0.0.1:${service.port}`;
  const client = createRpcClient(identity.IdentityService, address);
  return {
    db,
    address,
    client,
    async stop() {
      client.close();
      await service.stop();
      await bus.close();
    },
  };
}

/** identity with one enterprise team and a SCIM client of it. */
export interface ScimUnderTest {
  db: Db;
  client: RpcClient<typeof scim.ScimService>;
  teamId: string;
  stop(): Promise<void>;
}

export const json = (bytes: Uint8Array) => JSON.parse(Buffer.from(bytes).toString('utf8'));
export const body = (value: unknown) => Buffer.from(JSON.stringify(value));

/** Starts identity (`now` as its clock, when given) and makes the team `teamName` on the enterprise plan. */
export async function startScim(teamName: string, now?: () => Date): Promise<ScimUnderTest> {
  const started = await startIdentity(now);
  const teamId = (await started.client.createTeam({ name: teamName, plan: 'enterprise' })).id;
  const client = createRpcClient(scim.ScimService, started.address);
  return {
    db: started.db,
    client,
    teamId,
    async stop() {
      client.close();
      await started.stop();
    },
  };
}

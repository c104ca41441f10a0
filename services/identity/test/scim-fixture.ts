import { identity, scim } from '@costgov/contracts';
import type { Db } from '@costgov/db';
import { createLogger } from '@costgov/log';
import { createRpcClient, type RpcClient } from '@costgov/rpc';
import { startService, type RunningService } from '@costgov/runtime';
import { freshDb, testBus } from '@costgov/testing';
import { identityModule } from '../src/module';

/** identity on a fresh database, with one enterprise team and a SCIM client of it. */
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
  const logger = createLogger('test', 'silent');
  const bus = await testBus(logger);
  const db = await freshDb('identity');
  const service: RunningService = await startService(identityModule({ onBootstrap: () => undefined }), {
    logger,
    bus,
    env: {},
    openDb: async () => db,
    dataDir: 'memory',
    grpcAddress: '127.0.0.1:0',
    ...(now ? { now } : {}),
  });
  const admin = createRpcClient(identity.IdentityService, `127.0.0.1:${service.port}`);
  const teamId = (await admin.createTeam({ name: teamName, plan: 'enterprise' })).id;
  admin.close();
  const client = createRpcClient(scim.ScimService, `127.0.0.1:${service.port}`);
  return {
    db,
    client,
    teamId,
    async stop() {
      client.close();
      await service.stop();
      await bus.close();
    },
  };
}

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '@costgov/config';
import { identity } from '@costgov/contracts';
import { createLogger } from '@costgov/log';
import { createRpcClient, type RpcClient } from '@costgov/rpc';
import { eventually, freshDb, testBus } from '@costgov/testing';
import { startSystem, systemConfig, type RunningSystem } from '../src/system';

const logger = createLogger('test', 'silent');
const bootstrapKey = 'cg_live_revocationtestbootstrap0000000000';
// The relay's poll is made far slower than the bound below: only the wake-up at commit can meet it.
const pollMs = 5_000;

let system: RunningSystem;
let identityClient: RpcClient<typeof identity.IdentityService>;
let teamId: string;

beforeAll(async () => {
  const config = loadConfig(systemConfig, { PORT: '0', HOST: '127.0.0.1', DATA_DIR: 'memory' });
  system = await startSystem(config, logger, {
    env: { GUARD_BOOTSTRAP_API_KEY: bootstrapKey, OUTBOX_POLL_MS: String(pollMs) },
    quietBootstrap: true,
    anyPorts: true,
    openDb: (service) => freshDb(service),
    bus: await testBus(logger),
  });
  teamId = system.bootstrap!.teamId;
  const identityService = system.services.find((s) => s.name === 'identity')!;
  identityClient = createRpcClient(identity.IdentityService, `127.0.0.1:${identityService.port}`);
});
afterAll(async () => {
  identityClient?.close();
  await system?.stop();
});

const listProjects = (secret: string) =>
  fetch(`${system.url}/v1/guard/projects`, { headers: { authorization: `Bearer ${secret}` } });

describe('revocation', () => {
  it('reaches the gateway at the commit, far sooner than the outbox poll', async () => {
    for (let round = 0; round < 3; round++) {
      const { key, secret } = await identityClient.createApiKey(
        { name: `k${round}`, scopes: ['guard:read'] },
        { teamId },
      );
      expect((await listProjects(secret)).status).toBe(200); // now in the gateway's cache
      const revokedAt = Date.now();
      await identityClient.revokeApiKey({ id: key!.id }, { teamId });
      await eventually(async () => ((await listProjects(secret)).status === 401 ? true : undefined), pollMs);
      // Half the poll: a round that waited for a poll would take most of the 5 s, as the next round starts
      // just after it; the rest is room for five services sharing a loaded machine.
      expect(Date.now() - revokedAt).toBeLessThan(pollMs / 2);
    }
  });
});

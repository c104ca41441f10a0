import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createOutbox } from '@costgov/bus';
import { identity } from '@costgov/contracts';
import type { Db } from '@costgov/db';
import { UnauthenticatedError, ValidationError } from '@costgov/errors';
import { newId } from '@costgov/ids';
import { createLogger } from '@costgov/log';
import { createRpcClient, type RpcClient } from '@costgov/rpc';
import { startService } from '@costgov/runtime';
import { freshDb, testBus } from '@costgov/testing';
import { bootstrap, type BootstrapResult } from '../src/bootstrap';
import { apiKeysFactory } from '../src/keys/keys';
import { hashSecret } from '../src/keys/secrets';
import { identityModule } from '../src/module';
import { teamsFactory } from '../src/teams/teams';

const logger = createLogger('test', 'silent');
const bootstrapKey = 'cg_live_identitytestbootstrap000000000000';

async function startIdentity(env: NodeJS.ProcessEnv) {
  const bus = await testBus(logger);
  const db = await freshDb('identity');
  const results: BootstrapResult[] = [];
  const service = await startService(identityModule({ onBootstrap: (result) => results.push(result) }), {
    logger,
    bus,
    env,
    openDb: async () => db,
    dataDir: 'memory',
    grpcAddress: '127.0.0.1:0',
  });
  const client = createRpcClient(identity.IdentityService, `127.0.0.1:${service.port}`);
  return {
    service,
    client,
    results,
    db,
    async stop() {
      client.close();
      await service.stop();
      await bus.close();
    },
  };
}

describe('bootstrap on an empty database', () => {
  it('makes team default on the enterprise plan with GUARD_BOOTSTRAP_API_KEY as its key', async () => {
    const run = await startIdentity({ GUARD_BOOTSTRAP_API_KEY: bootstrapKey });
    try {
      expect(run.results).toEqual([{ teamId: expect.stringMatching(/^team_/), apiKeySource: 'environment' }]);
      const { principal } = await run.client.authenticate({ credential: bootstrapKey });
      expect(principal).toMatchObject({
        teamId: run.results[0]!.teamId,
        kind: identity.CredentialKind.API_KEY,
        scopes: ['guard:read', 'guard:write', 'scans:write'],
        plan: 'enterprise',
      });
      const { teams } = await run.client.listTeams({});
      expect(teams.map((t) => [t.name, t.plan])).toEqual([['default', 'enterprise']]);
    } finally {
      await run.stop();
    }
  });

  it('generates a key when none is configured, and does nothing on a database that has teams', async () => {
    const run = await startIdentity({});
    try {
      const [result] = run.results;
      expect(result?.apiKeySource).toBe('generated');
      expect(result?.generatedApiKey).toMatch(/^cg_live_[0-9A-Za-z]{40}$/);
      await expect(run.client.authenticate({ credential: result!.generatedApiKey! })).resolves.toBeDefined();

      const teams = teamsFactory({ db: run.db, newId });
      const apiKeys = apiKeysFactory({
        db: run.db,
        newId,
        now: () => new Date(),
        outbox: createOutbox({ source: 'identity' }),
      });
      expect(await bootstrap({ db: run.db, teams, apiKeys }, bootstrapKey)).toBeUndefined();
      expect((await run.client.listTeams({})).teams).toHaveLength(1);
    } finally {
      await run.stop();
    }
  });
});

describe('API keys', () => {
  let run: Awaited<ReturnType<typeof startIdentity>>;
  let client: RpcClient<typeof identity.IdentityService>;
  let db: Db;
  let teamId: string;

  beforeAll(async () => {
    run = await startIdentity({ GUARD_BOOTSTRAP_API_KEY: bootstrapKey });
    client = run.client;
    db = run.db;
    teamId = (await client.createTeam({ name: 'acme', plan: 'team' })).id;
  });
  afterAll(() => run.stop());

  it('shows the secret once and stores only its hash', async () => {
    const { key, secret } = await client.createApiKey({ name: 'ci', scopes: ['guard:read'] }, { teamId });
    expect(secret).toMatch(/^cg_live_[0-9A-Za-z]{40}$/);
    expect(key).toMatchObject({ teamId, name: 'ci', scopes: ['guard:read'], prefix: secret.slice(0, 12) });
    const { keys } = await client.listApiKeys({}, { teamId });
    expect(
      JSON.stringify(
        keys.map((k) => ({ ...k })),
        (_k, v) => (typeof v === 'bigint' ? String(v) : v),
      ),
    ).not.toContain(secret);
    const { rows } = await db.query<Record<string, unknown>>('SELECT * FROM api_keys WHERE id = $1', [
      key!.id,
    ]);
    expect(rows[0]!.secret_hash).toBe(hashSecret(secret));
    expect(JSON.stringify(rows[0])).not.toContain(secret);
  });

  it('authenticates a live key to its team and scopes, and records when it was used', async () => {
    const { key, secret } = await client.createApiKey(
      { name: 'dash', scopes: ['guard:read', 'guard:write'] },
      { teamId },
    );
    const { principal, cacheTtlSeconds } = await client.authenticate({ credential: secret });
    expect(principal).toMatchObject({
      teamId,
      credentialId: key!.id,
      scopes: ['guard:read', 'guard:write'],
      plan: 'team',
    });
    expect(cacheTtlSeconds).toBeGreaterThan(0);
    const { rows } = await db.query<{ last_used_at: Date | null }>(
      'SELECT last_used_at FROM api_keys WHERE id = $1',
      [key!.id],
    );
    expect(rows[0]!.last_used_at).toBeInstanceOf(Date);
  });

  it.each([
    ['an unknown key', 'cg_live_0000000000000000000000000000000000000000'],
    ['something that is not a key', 'hello'],
    ['an empty credential', ''],
  ])('refuses %s', async (_case, credential) => {
    await expect(client.authenticate({ credential })).rejects.toBeInstanceOf(UnauthenticatedError);
  });

  it('refuses a revoked key and an expired one', async () => {
    let clock = new Date('2026-01-01T00:00:00Z');
    const apiKeys = apiKeysFactory({
      db,
      newId,
      now: () => clock,
      outbox: createOutbox({ source: 'identity' }),
    });
    const revoked = await apiKeys.createApiKey(teamId, { name: 'old', scopes: ['guard:read'] });
    await apiKeys.revokeApiKey(teamId, revoked.key.id);
    await expect(apiKeys.authenticateApiKey(revoked.secret)).rejects.toBeInstanceOf(UnauthenticatedError);

    const expiring = await apiKeys.createApiKey(teamId, {
      name: 'temp',
      scopes: ['guard:read'],
      expiresAt: new Date('2026-01-02T00:00:00Z'),
    });
    await expect(apiKeys.authenticateApiKey(expiring.secret)).resolves.toMatchObject({ teamId });
    clock = new Date('2026-01-02T00:00:01Z');
    await expect(apiKeys.authenticateApiKey(expiring.secret)).rejects.toBeInstanceOf(UnauthenticatedError);
  });

  it('refuses unknown scopes and a blank name, naming the fields', async () => {
    const error = await client
      .createApiKey({ name: ' ', scopes: ['guard:admin'] }, { teamId })
      .catch((e: unknown) => e as ValidationError);
    expect(error).toBeInstanceOf(ValidationError);
    expect((error as ValidationError).details.map((d) => d.field).sort()).toEqual(['name', 'scopes']);
  });
});

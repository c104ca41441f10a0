import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { randomUUID } from 'node:crypto';
import { exportJWK, generateKeyPair, SignJWT, type JWK } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { decodeEvent, type CloudEvent } from '@costgov/bus';
import { events, identity } from '@costgov/contracts';
import { NotFoundError, UnauthenticatedError, ValidationError } from '@costgov/errors';
import { createLogger } from '@costgov/log';
import { createRpcClient, type RpcClient } from '@costgov/rpc';
import { startService, type RunningService } from '@costgov/runtime';
import { eventually, freshDb, testBus } from '@costgov/testing';
import { identityModule } from '../src/module';

const logger = createLogger('test', 'silent');
const issuer = 'https://login.test.costgov.dev';
const audience = 'costgov-api';

let jwksServer: Server;
type SigningKey = Awaited<ReturnType<typeof generateKeyPair>>['privateKey'];
let signingKey: SigningKey;
let otherKey: SigningKey;
let service: RunningService;
let client: RpcClient<typeof identity.IdentityService>;
let bus: Awaited<ReturnType<typeof testBus>>;
let teamId: string;
let otherTeamId: string;
const seen: CloudEvent[] = [];

/** A token as the test's own identity provider signs it. */
function token(
  claims: Record<string, unknown>,
  options: { key?: SigningKey; alg?: string; expiresIn?: string; iss?: string; aud?: string } = {},
) {
  return new SignJWT(claims)
    .setProtectedHeader({ alg: options.alg ?? 'ES256', kid: 'test-key' })
    .setIssuer(options.iss ?? issuer)
    .setAudience(options.aud ?? audience)
    .setIssuedAt()
    .setExpirationTime(options.expiresIn ?? '5m')
    .sign(options.key ?? signingKey);
}

async function addUser(
  team: string,
  userName: string,
  options: { active?: boolean; externalId?: string } = {},
) {
  const id = randomUUID();
  await service.db.query(
    `INSERT INTO scim_users (id, team_id, user_name, external_id, emails, active, role)
     VALUES ($1, $2, $3, $4, $5, $6, 'member')`,
    [
      id,
      team,
      userName,
      options.externalId ?? null,
      JSON.stringify([{ value: userName, primary: true }]),
      options.active ?? true,
    ],
  );
  return id;
}

beforeAll(async () => {
  const pair = await generateKeyPair('ES256');
  signingKey = pair.privateKey;
  otherKey = (await generateKeyPair('ES256')).privateKey;
  const jwk: JWK = { ...(await exportJWK(pair.publicKey)), kid: 'test-key', alg: 'ES256', use: 'sig' };
  jwksServer = createServer((_req, res) => {
    res.setHeader('content-type', 'application/json');
    res.end(JSON.stringify({ keys: [jwk] }));
  });
  await new Promise<void>((resolve) => jwksServer.listen(0, '127.0.0.1', resolve));
  const jwksUrl = `http://127.0.0.1:${(jwksServer.address() as AddressInfo).port}/jwks.json`;

  bus = await testBus(logger);
  const db = await freshDb('identity');
  service = await startService(identityModule({ onBootstrap: () => undefined }), {
    logger,
    bus,
    env: {
      OAUTH_ISSUER: issuer,
      OAUTH_AUDIENCE: audience,
      OAUTH_JWKS_URL: jwksUrl,
      OAUTH_CLOCK_SKEW_SECONDS: '5',
    },
    openDb: async () => db,
    dataDir: 'memory',
    grpcAddress: '127.0.0.1:0',
  });
  client = createRpcClient(identity.IdentityService, `127.0.0.1:${service.port}`);
  teamId = (await client.createTeam({ name: 'acme', plan: 'enterprise' })).id;
  otherTeamId = (await client.createTeam({ name: 'globex', plan: 'team' })).id;
  await bus.consume({
    durable: 'identity_test',
    types: ['identity.>'],
    handler: async (event) => void seen.push(event),
  });
});

afterAll(async () => {
  client?.close();
  await service?.stop();
  await bus?.close();
  await new Promise((resolve) => jwksServer?.close(resolve));
});

describe('SCIM tokens', () => {
  it('authenticate as SCIM tokens of their team with the SCIM limits, and nothing else', async () => {
    const { token: created, secret } = await client.createScimToken({ name: 'okta' }, { teamId });
    expect(secret).toMatch(/^cg_scim_[0-9A-Za-z]{40}$/);
    const { principal } = await client.authenticate({ credential: secret });
    expect(principal).toMatchObject({
      teamId,
      credentialId: created!.id,
      kind: identity.CredentialKind.SCIM_TOKEN,
      scopes: ['scim'],
      limits: { requestsPerMinute: 600, concurrentRequests: 20 },
    });
    const { tokens } = await client.listScimTokens({}, { teamId });
    expect(tokens.map((t) => t.id)).toEqual([created!.id]);
  });

  it('stop authenticating once revoked, and the revocation is published once', async () => {
    const { token: created, secret } = await client.createScimToken({ name: 'entra' }, { teamId });
    await client.revokeScimToken({ id: created!.id }, { teamId });
    await client.revokeScimToken({ id: created!.id }, { teamId });
    await expect(client.authenticate({ credential: secret })).rejects.toBeInstanceOf(UnauthenticatedError);
    const revoked = await eventually(() => seen.find((e) => e.subject === created!.id));
    expect(revoked.type).toBe('identity.key.revoked');
    expect(decodeEvent(events.CredentialRevokedSchema, revoked)).toMatchObject({
      credentialId: created!.id,
      teamId,
      kind: 'scim_token',
    });
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(seen.filter((e) => e.subject === created!.id)).toHaveLength(1);
  });

  it('cannot be revoked through another team', async () => {
    const { token: created, secret } = await client.createScimToken({ name: 'mine' }, { teamId });
    await expect(client.revokeScimToken({ id: created!.id }, { teamId: otherTeamId })).rejects.toBeInstanceOf(
      NotFoundError,
    );
    await expect(client.authenticate({ credential: secret })).resolves.toBeDefined();
  });
});

describe('API key revocation', () => {
  it('takes effect at once and publishes identity.key.revoked', async () => {
    const { key, secret } = await client.createApiKey({ name: 'ci', scopes: ['guard:read'] }, { teamId });
    await client.authenticate({ credential: secret });
    const revoked = await client.revokeApiKey({ id: key!.id }, { teamId });
    expect(revoked.revokedAt).toBeDefined();
    await expect(client.authenticate({ credential: secret })).rejects.toBeInstanceOf(UnauthenticatedError);
    const event = await eventually(() => seen.find((e) => e.subject === key!.id));
    expect(decodeEvent(events.CredentialRevokedSchema, event)).toMatchObject({ kind: 'api_key', teamId });
  });
});

describe('team limits', () => {
  it('apply to the credentials of the team, and 0 restores the default', async () => {
    const { secret } = await client.createApiKey(
      { name: 'busy', scopes: ['guard:read'] },
      { teamId: otherTeamId },
    );
    await client.setTeamLimits({ teamId: otherTeamId, apiRequestsPerMinute: 600, apiConcurrentRequests: 25 });
    // A limit left out stays as it is.
    await client.setTeamLimits({ teamId: otherTeamId, scimRequestsPerMinute: 900 });
    expect((await client.authenticate({ credential: secret })).principal?.limits).toMatchObject({
      requestsPerMinute: 600,
      concurrentRequests: 25,
    });
    expect((await client.getTeam({ id: otherTeamId })).scimLimits?.requestsPerMinute).toBe(900);
    await client.setTeamLimits({ teamId: otherTeamId, apiRequestsPerMinute: 0, apiConcurrentRequests: 0 });
    expect((await client.authenticate({ credential: secret })).principal?.limits).toMatchObject({
      requestsPerMinute: 120,
      concurrentRequests: 10,
    });
    await expect(
      client.setTeamLimits({ teamId: otherTeamId, apiRequestsPerMinute: -5 }),
    ).rejects.toBeInstanceOf(ValidationError);
  });

  it('grants scan credits', async () => {
    const before = (await client.getTeam({ id: teamId })).scanCredits;
    const after = await client.grantScanCredits({ teamId, credits: 25n });
    expect(after.scanCredits).toBe(before + 25n);
    await expect(client.grantScanCredits({ teamId, credits: 0n })).rejects.toBeInstanceOf(ValidationError);
  });
});

describe('OAuth tokens', () => {
  it('map by sub (user id), externalId or e-mail to an active user, with the scopes of the token', async () => {
    const userId = await addUser(teamId, 'ada@acme.test', { externalId: 'okta-00u1' });
    for (const claims of [
      { sub: userId },
      { sub: 'okta-00u1' },
      { sub: 'someone', email: 'ADA@acme.test' },
    ]) {
      const { principal, cacheTtlSeconds } = await client.authenticate({
        credential: await token({ ...claims, scope: 'guard:read openid profile' }),
      });
      expect(principal).toMatchObject({
        teamId,
        userId,
        kind: identity.CredentialKind.OAUTH_TOKEN,
        scopes: ['guard:read'],
      });
      expect(principal?.credentialId).toBe(`user:${userId}`);
      expect(cacheTtlSeconds).toBeGreaterThan(0);
    }
  });

  it.each([
    ['signed by another key', async (sub: string) => token({ sub }, { key: otherKey })],
    ['from another issuer', async (sub: string) => token({ sub }, { iss: 'https://evil.test' })],
    ['for another audience', async (sub: string) => token({ sub }, { aud: 'someone-else' })],
    ['expired', async (sub: string) => token({ sub }, { expiresIn: '-1m' })],
    ['for an unknown user', async () => token({ sub: randomUUID() })],
    ['not a JWT at all', async () => 'abc.def.ghi'],
  ])('refuses a token %s', async (_case, make) => {
    const userId = await addUser(teamId, `u-${randomUUID()}@acme.test`);
    await expect(client.authenticate({ credential: await make(userId) })).rejects.toBeInstanceOf(
      UnauthenticatedError,
    );
  });

  it('refuses a deactivated user, and a team_id claim of another team', async () => {
    const inactive = await addUser(teamId, 'gone@acme.test', { active: false });
    await expect(client.authenticate({ credential: await token({ sub: inactive }) })).rejects.toBeInstanceOf(
      UnauthenticatedError,
    );
    const active = await addUser(teamId, 'here@acme.test');
    await expect(
      client.authenticate({ credential: await token({ sub: active, team_id: otherTeamId }) }),
    ).rejects.toBeInstanceOf(UnauthenticatedError);
  });

  it('refuses an e-mail that matches users of two teams unless team_id says which', async () => {
    await addUser(teamId, 'shared@both.test');
    const theirs = await addUser(otherTeamId, 'shared@both.test');
    await expect(
      client.authenticate({ credential: await token({ sub: 'x', email: 'shared@both.test' }) }),
    ).rejects.toBeInstanceOf(UnauthenticatedError);
    const { principal } = await client.authenticate({
      credential: await token({ sub: 'x', email: 'shared@both.test', team_id: otherTeamId }),
    });
    expect(principal?.userId).toBe(theirs);
  });
});

describe('credentials of a team that does not exist', () => {
  it('answer not found rather than a database error', async () => {
    await expect(
      client.createApiKey({ name: 'x', scopes: ['guard:read'] }, { teamId: 'team_nope' }),
    ).rejects.toBeInstanceOf(NotFoundError);
    await expect(client.createScimToken({ name: 'x' }, { teamId: 'team_nope' })).rejects.toBeInstanceOf(
      NotFoundError,
    );
  });
});

import { createServer, request, type ClientRequest, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { randomUUID } from 'node:crypto';
import { exportJWK, generateKeyPair, SignJWT } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '@costgov/config';
import { identity } from '@costgov/contracts';
import { createLogger } from '@costgov/log';
import { createRpcClient, type RpcClient } from '@costgov/rpc';
import { eventually, freshDb, testBus } from '@costgov/testing';
import { startSystem, systemConfig, type RunningSystem } from '../src/system';

const logger = createLogger('test', 'silent');
const issuer = 'https://idp.access.test';
const audience = 'costgov';
const bootstrapKey = 'cg_live_accesstestbootstrap00000000000000';

let system: RunningSystem;
let identityClient: RpcClient<typeof identity.IdentityService>;
let jwks: Server;
let teamId: string;
let sign: (claims: Record<string, unknown>) => Promise<string>;
const keys: Record<string, string> = {};

async function newKey(scopes: string[], name = 'k'): Promise<{ id: string; secret: string }> {
  const { key, secret } = await identityClient.createApiKey({ name, scopes }, { teamId });
  return { id: key!.id, secret };
}

const fetchAs = (
  credential: string | null,
  method: string,
  path: string,
  body?: unknown,
  headers: Record<string, string> = {},
) =>
  fetch(`${system.url}${path}`, {
    method,
    headers: {
      ...(credential
        ? { authorization: credential.startsWith('Basic') ? credential : `Bearer ${credential}` }
        : {}),
      ...(body ? { 'content-type': 'application/json' } : {}),
      ...headers,
    },
    body: body ? JSON.stringify(body) : undefined,
  });

beforeAll(async () => {
  const pair = await generateKeyPair('ES256');
  const jwk = { ...(await exportJWK(pair.publicKey)), kid: 'k1', alg: 'ES256' };
  jwks = createServer((_req, res) => res.end(JSON.stringify({ keys: [jwk] })));
  await new Promise<void>((resolve) => jwks.listen(0, '127.0.0.1', resolve));
  sign = (claims) =>
    new SignJWT(claims)
      .setProtectedHeader({ alg: 'ES256', kid: 'k1' })
      .setIssuer(issuer)
      .setAudience(audience)
      .setExpirationTime('10m')
      .sign(pair.privateKey);

  // Real Redis when the run has it (generous timeout: a loaded CI machine must not flip to the fallback).
  const config = loadConfig(systemConfig, {
    PORT: '0',
    HOST: '127.0.0.1',
    DATA_DIR: 'memory',
    REDIS_URL: process.env.REDIS_URL ?? '',
    RATE_LIMIT_REDIS_TIMEOUT_MS: '250',
  });
  system = await startSystem(config, logger, {
    env: {
      GUARD_BOOTSTRAP_API_KEY: bootstrapKey,
      OAUTH_ISSUER: issuer,
      OAUTH_AUDIENCE: audience,
      OAUTH_JWKS_URL: `http://127.0.0.1:${(jwks.address() as AddressInfo).port}/jwks`,
    },
    quietBootstrap: true,
    anyPorts: true,
    openDb: (service) => freshDb(service),
    bus: await testBus(logger),
  });
  teamId = system.bootstrap!.teamId;
  const identityService = system.services.find((s) => s.name === 'identity')!;
  identityClient = createRpcClient(identity.IdentityService, `127.0.0.1:${identityService.port}`);

  keys.readWrite = (await newKey(['guard:read', 'guard:write'])).secret; // the bootstrap key also has scans:write
  keys.readOnly = (await newKey(['guard:read'])).secret;
  keys.scans = (await newKey(['guard:read', 'guard:write', 'scans:write'])).secret;
  const revoked = await newKey(['guard:read', 'guard:write']);
  await identityClient.revokeApiKey({ id: revoked.id }, { teamId });
  keys.revoked = revoked.secret;
  const expired = await newKey(['guard:read', 'guard:write']);
  await identityService.db.query(
    `UPDATE api_keys SET expires_at = now() - interval '1 second' WHERE id = $1`,
    [expired.id],
  );
  keys.expired = expired.secret;
  keys.scim = (await identityClient.createScimToken({ name: 'okta' }, { teamId })).secret;

  const addUser = async (active: boolean) => {
    const id = randomUUID();
    await identityService.db.query(
      `INSERT INTO scim_users (id, team_id, user_name, active, role) VALUES ($1, $2, $3, $4, 'member')`,
      [id, teamId, `${id}@access.test`, active],
    );
    return id;
  };
  keys.oauthActive = await sign({ sub: await addUser(true), scope: 'guard:read guard:write' });
  keys.oauthDeactivated = await sign({ sub: await addUser(false), scope: 'guard:read guard:write' });
});

afterAll(async () => {
  identityClient?.close();
  await system?.stop();
  await new Promise((resolve) => jwks?.close(resolve));
});

describe('scope and credential matrix', () => {
  let projectId: string;
  beforeAll(async () => {
    projectId = (
      (await (await fetchAs(bootstrapKey, 'POST', '/v1/guard/projects', { name: 'matrix' })).json()) as {
        data: { id: string };
      }
    ).data.id;
  });

  const routes: Array<[string, string, (id: string) => string, unknown?]> = [
    ['list projects', 'GET', () => '/v1/guard/projects'],
    ['read a project', 'GET', (id) => `/v1/guard/projects/${id}`],
    ['create a project', 'POST', () => '/v1/guard/projects', { name: `p-${randomUUID()}` }],
    ['update a project', 'PATCH', (id) => `/v1/guard/projects/${id}`, { name: 'matrix' }],
    ['trigger a scan', 'POST', () => '/v1/guard/scans', { project_id: 'prj_x' }],
  ];
  const isWrite = (method: string) => method !== 'GET';

  // Expected status per credential: 401 refused, 403 forbidden, 'ok' for anything past access control.
  const credentials: Array<[string, (method: string, path: string) => 401 | 403 | 'ok']> = [
    ['no credential', () => 401],
    ['a malformed header', () => 401],
    ['an unknown key', () => 401],
    ['a revoked key', () => 401],
    ['an expired key', () => 401],
    ['a SCIM token', () => 401],
    ['a read-only key', (method) => (isWrite(method) ? 403 : 'ok')],
    ['a read-write key', (method, path) => (path === '/v1/guard/scans' ? 403 : 'ok')],
    ['a key with scans:write', () => 'ok'],
    ['an OAuth token of an active user', (_m, path) => (path === '/v1/guard/scans' ? 403 : 'ok')],
    ['an OAuth token of a deactivated user', () => 401],
  ];
  const credentialOf: Record<string, () => string | null> = {
    'no credential': () => null,
    'a malformed header': () => 'Basic dXNlcjpwYXNz',
    'an unknown key': () => 'cg_live_unknownunknownunknownunknownunkn',
    'a revoked key': () => keys.revoked!,
    'an expired key': () => keys.expired!,
    'a SCIM token': () => keys.scim!,
    'a read-only key': () => keys.readOnly!,
    'a read-write key': () => keys.readWrite!,
    'a key with scans:write': () => keys.scans!,
    'an OAuth token of an active user': () => keys.oauthActive!,
    'an OAuth token of a deactivated user': () => keys.oauthDeactivated!,
  };

  const cases = credentials.flatMap(([who, expect]) =>
    routes.map(([what, method, path, body]) => [who, what, method, path, body, expect] as const),
  );

  it.each(cases)('%s: %s', async (who, _what, method, path, body, expected) => {
    const target = path(projectId);
    const response = await fetchAs(credentialOf[who]!(), method, target, body);
    const want = expected(method, target.split('?')[0]!.replace(/\/prj_.*$/, '/:id'));
    const payload = (await response.json()) as { error?: { code: string } };
    if (want === 'ok') {
      expect([401, 403]).not.toContain(response.status);
    } else {
      expect(response.status).toBe(want);
      expect(payload.error?.code).toBe(want === 401 ? 'unauthorized' : 'forbidden');
      if (want === 401) expect(response.headers.get('www-authenticate')).toMatch(/^Bearer realm="costgov"/);
    }
  });

  it('answers an API key on /scim/v2 with a SCIM 401, and lets a SCIM token through', async () => {
    const refused = await fetchAs(bootstrapKey, 'GET', '/scim/v2/Users');
    expect(refused.status).toBe(401);
    expect(await refused.json()).toMatchObject({
      schemas: ['urn:ietf:params:scim:api:messages:2.0:Error'],
      status: '401',
    });
    const allowed = await fetchAs(keys.scim!, 'GET', '/scim/v2/Users');
    expect([401, 403]).not.toContain(allowed.status);
  });
});

describe('revocation', () => {
  it('takes effect at once, well inside the cache lifetime', async () => {
    const { id, secret } = await newKey(['guard:read']);
    expect((await fetchAs(secret, 'GET', '/v1/guard/projects')).status).toBe(200); // now cached
    const revokedAt = Date.now();
    await identityClient.revokeApiKey({ id }, { teamId });
    await eventually(
      async () => ((await fetchAs(secret, 'GET', '/v1/guard/projects')).status === 401 ? true : undefined),
      5_000,
    );
    expect(Date.now() - revokedAt).toBeLessThan(5_000);
  });
});

describe('rate limits', () => {
  it('lets a burst of 120 through, refuses once the bucket is empty with Retry-After, and refills at 2 per second', async () => {
    const { secret } = await newKey(['guard:read']);
    const started = Date.now();
    const statuses: number[] = [];
    let last: Response | undefined;
    for (let i = 0; i < 120; i++) {
      last = await fetchAs(secret, 'GET', '/v1/guard/projects?per_page=1');
      statuses.push(last.status);
    }
    expect(statuses.every((s) => s === 200)).toBe(true);
    expect(last!.headers.get('ratelimit-policy')).toContain('"default";q=120;w=60');
    expect(last!.headers.get('ratelimit')).toMatch(/^"default";r=\d+;t=\d+$/);

    // What refilled while the burst ran (2 per second) still passes; then the bucket is empty.
    let extra = 0;
    let refused: Response | undefined;
    let refusedSentAt = 0; // before the gateway emptied the bucket: refills are counted from no later
    while (!refused && extra < 50) {
      refusedSentAt = Date.now();
      const response = await fetchAs(secret, 'GET', '/v1/guard/projects?per_page=1');
      if (response.status === 429) refused = response;
      else extra++;
    }
    const elapsedSeconds = (Date.now() - started) / 1000;
    expect(refused?.status).toBe(429);
    expect(extra).toBeLessThanOrEqual(Math.ceil(elapsedSeconds * 2) + 1);
    expect(refused!.headers.get('retry-after')).toBe('1');
    expect(((await refused!.json()) as { error: { code: string } }).error.code).toBe('rate_limited');

    await new Promise((resolve) => setTimeout(resolve, 1_500));
    let refilled = 0;
    while ((await fetchAs(secret, 'GET', '/v1/guard/projects?per_page=1')).status === 200) refilled++;
    // From the refused request's send, not from after its answer: a loaded machine can make the gap between
    // them long enough for another token to come.
    const waited = (Date.now() - refusedSentAt) / 1000;
    expect(refilled).toBeGreaterThanOrEqual(Math.floor(1.5 * 2));
    expect(refilled).toBeLessThanOrEqual(Math.ceil(waited * 2));
  });

  it('holds 10 requests in flight, refuses the 11th, and frees the slot when one ends', async () => {
    const { secret } = await newKey(['guard:read', 'guard:write']);
    const { port } = new URL(system.url);
    // Each request sends its headers and half its body, then waits: it holds a slot until it ends. A poll
    // can take a slot for a moment just as one arrives, which is then refused: it is sent again.
    const open = new Set<ClientRequest>();
    let allHeld = false;
    const holdAgainWhenRefused = (): void => {
      const req = request({
        host: '127.0.0.1',
        port: Number(port),
        method: 'POST',
        path: '/v1/guard/projects',
        headers: {
          authorization: `Bearer ${secret}`,
          'content-type': 'application/json',
          'content-length': '100',
        },
      });
      req.on('error', () => undefined);
      req.on('response', (res) => {
        res.resume();
        open.delete(req);
        if (res.statusCode === 429 && !allHeld) holdAgainWhenRefused();
      });
      req.write('{"name":');
      open.add(req);
    };
    for (let i = 0; i < 10; i++) holdAgainWhenRefused();
    // Polled every 150 ms, not eventually's 25 ms: on a loaded machine the ten can take seconds to arrive,
    // and fast polls would spend the key's bucket (120) and get 'rate' instead of 'in flight'.
    const deadline = Date.now() + 20_000;
    for (;;) {
      const response = await fetchAs(secret, 'GET', '/v1/guard/projects');
      if (response.status === 429 && (await response.text()).includes('in flight')) break;
      if (Date.now() > deadline) throw new Error('the ten requests held were never seen in flight');
      await new Promise((resolve) => setTimeout(resolve, 150));
    }
    allHeld = true;
    const one = [...open][0]!;
    open.delete(one);
    one.destroy();
    await eventually(async () =>
      (await fetchAs(secret, 'GET', '/v1/guard/projects')).status === 200 ? true : undefined,
    );
    for (const req of open) req.destroy();
  });
});

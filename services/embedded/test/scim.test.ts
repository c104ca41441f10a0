import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { exportJWK, generateKeyPair, SignJWT } from 'jose';
import { SMTPServer } from 'smtp-server';
import Ajv2020 from 'ajv/dist/2020';
import addFormats from 'ajv-formats';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '@costgov/config';
import { identity } from '@costgov/contracts';
import { createLogger } from '@costgov/log';
import { createRpcClient } from '@costgov/rpc';
import { eventually, freePort, freshDb, testBus } from '@costgov/testing';
import { startSystem, systemConfig, type RunningSystem } from '../src/system';

const logger = createLogger('test', 'silent');
const apiKey = 'cg_live_scimtestbootstrapkey0000000000000';
const userSchema = 'urn:ietf:params:scim:schemas:core:2.0:User';
const groupSchema = 'urn:ietf:params:scim:schemas:core:2.0:Group';
const patchSchema = 'urn:ietf:params:scim:api:messages:2.0:PatchOp';
const errorSchema = 'urn:ietf:params:scim:api:messages:2.0:Error';

let system: RunningSystem;
let scimToken = '';
let teamPlanToken = '';
let throttledToken = '';
let smtp: SMTPServer;
let jwks: Server;
let sign: (claims: Record<string, unknown>) => Promise<string>;
const mails: Array<{ to: string; raw: string }> = [];

interface Reply {
  status: number;
  headers: Headers;
  body: any; // eslint-disable-line @typescript-eslint/no-explicit-any
}

async function scim(
  method: string,
  path: string,
  body?: unknown,
  options: { token?: string; raw?: string; headers?: Record<string, string> } = {},
): Promise<Reply> {
  const response = await fetch(`${system.url}/scim/v2${path}`, {
    method,
    headers: {
      authorization: `Bearer ${options.token ?? scimToken}`,
      ...(body !== undefined || options.raw !== undefined ? { 'content-type': 'application/scim+json' } : {}),
      ...options.headers,
    },
    body: options.raw ?? (body === undefined ? undefined : JSON.stringify(body)),
  });
  const text = await response.text();
  return { status: response.status, headers: response.headers, body: text ? JSON.parse(text) : undefined };
}

const patch = (...Operations: unknown[]) => ({ schemas: [patchSchema], Operations });

const expectScimError = (reply: Reply, status: number, scimType?: string) => {
  expect(reply.status).toBe(status);
  expect(reply.headers.get('content-type')).toMatch(/application\/scim\+json/);
  expect(reply.body).toMatchObject({
    schemas: [errorSchema],
    status: String(status),
    detail: expect.any(String),
  });
  if (scimType) expect(reply.body.scimType).toBe(scimType);
};

const countUsers = async () => (await scim('GET', '/Users?count=0')).body.totalResults as number;

beforeAll(async () => {
  const smtpPort = await freePort();
  smtp = new SMTPServer({
    authOptional: true,
    disabledCommands: ['STARTTLS'],
    onData(stream, session, callback) {
      let raw = '';
      stream.on('data', (chunk: Buffer) => (raw += chunk.toString()));
      stream.on('end', () => {
        mails.push({ to: session.envelope.rcptTo.map((r) => r.address).join(','), raw });
        callback();
      });
    },
  });
  await new Promise<void>((resolve) => smtp.listen(smtpPort, '127.0.0.1', resolve));

  const pair = await generateKeyPair('ES256');
  const jwk = { ...(await exportJWK(pair.publicKey)), kid: 'k', alg: 'ES256' };
  jwks = createServer((_req, res) => res.end(JSON.stringify({ keys: [jwk] })));
  await new Promise<void>((resolve) => jwks.listen(0, '127.0.0.1', resolve));
  sign = (claims) =>
    new SignJWT(claims)
      .setProtectedHeader({ alg: 'ES256', kid: 'k' })
      .setIssuer('https://idp.scim.test')
      .setAudience('costgov')
      .setExpirationTime('10m')
      .sign(pair.privateKey);

  const config = loadConfig(systemConfig, { PORT: '0', HOST: '127.0.0.1', DATA_DIR: 'memory' });
  system = await startSystem(config, logger, {
    env: {
      GUARD_BOOTSTRAP_API_KEY: apiKey,
      SMTP_URL: `smtp://127.0.0.1:${smtpPort}`,
      OAUTH_ISSUER: 'https://idp.scim.test',
      OAUTH_AUDIENCE: 'costgov',
      OAUTH_JWKS_URL: `http://127.0.0.1:${(jwks.address() as AddressInfo).port}/jwks`,
    },
    quietBootstrap: true,
    anyPorts: true,
    openDb: (service) => freshDb(service),
    bus: await testBus(logger),
  });
  const identityService = system.services.find((s) => s.name === 'identity')!;
  const client = createRpcClient(identity.IdentityService, `127.0.0.1:${identityService.port}`);
  scimToken = (await client.createScimToken({ name: 'okta' }, { teamId: system.bootstrap!.teamId })).secret;
  const smallTeam = await client.createTeam({ name: 'small', plan: 'team' });
  teamPlanToken = (await client.createScimToken({ name: 'okta' }, { teamId: smallTeam.id })).secret;
  const throttled = await client.createTeam({ name: 'throttled', plan: 'enterprise' });
  await client.setTeamLimits({ teamId: throttled.id, scimRequestsPerMinute: 3 });
  throttledToken = (await client.createScimToken({ name: 'entra' }, { teamId: throttled.id })).secret;
  client.close();
}, 180_000); // starting every service is slow on a loaded machine (PGlite migrations)

afterAll(async () => {
  await system?.stop();
  await new Promise((resolve) => smtp?.close(resolve as () => void));
  await new Promise((resolve) => jwks?.close(resolve));
});

describe('the flow an identity provider runs', () => {
  let userId = '';
  let otherId = '';
  let groupId = '';

  it('checks existence by filter, then creates the user (201, Location, ETag) and welcomes them by e-mail', async () => {
    const none = await scim(
      'GET',
      `/Users?filter=${encodeURIComponent('userName eq "ada.lovelace@example.com"')}`,
    );
    expect(none.status).toBe(200);
    expect(none.body).toMatchObject({
      schemas: ['urn:ietf:params:scim:api:messages:2.0:ListResponse'],
      totalResults: 0,
      itemsPerPage: 0,
      Resources: [],
    });

    // Okta's create body ("SCIM 2.0 protocol reference: Create the user").
    const created = await scim('POST', '/Users', {
      schemas: [userSchema],
      userName: 'Ada.Lovelace@example.com',
      name: { givenName: 'Ada', familyName: 'Lovelace' },
      emails: [{ primary: true, value: 'ada.lovelace@example.com', type: 'work' }],
      displayName: 'Ada Lovelace',
      locale: 'en-US',
      externalId: '00ujl29u0le5T6Aj10h7',
      groups: [],
      password: '1mz050nq',
      active: true,
    });
    expect(created.status).toBe(201);
    userId = created.body.id;
    expect(userId).toMatch(/^[0-9a-f-]{36}$/);
    expect(created.headers.get('location')).toBe(`${system.url}/scim/v2/Users/${userId}`);
    expect(created.headers.get('etag')).toBe('W/"1"');
    expect(created.body).toMatchObject({
      schemas: [userSchema],
      userName: 'Ada.Lovelace@example.com',
      name: { givenName: 'Ada', familyName: 'Lovelace' },
      active: true,
      groups: [],
      externalId: '00ujl29u0le5T6Aj10h7',
      meta: { resourceType: 'User', location: `${system.url}/scim/v2/Users/${userId}`, version: 'W/"1"' },
    });
    expect(created.body).not.toHaveProperty('password');

    const found = await scim(
      'GET',
      `/Users?filter=${encodeURIComponent('userName eq "ADA.LOVELACE@example.com"')}`,
    );
    expect(found.body.totalResults).toBe(1);
    expect(found.body.Resources[0].id).toBe(userId);

    const mail = await eventually(() => mails.find((m) => m.to === 'ada.lovelace@example.com'));
    expect(mail.raw).toMatch(/Subject: .*Welcome/i);
    expect(mail.raw).toContain('Ada');
  });

  it('refuses a duplicate userName, whatever its case, with 409 uniqueness', async () => {
    const duplicate = await scim('POST', '/Users', {
      schemas: [userSchema],
      userName: 'ada.lovelace@EXAMPLE.com',
    });
    expectScimError(duplicate, 409, 'uniqueness');
    expect(await countUsers()).toBe(1);
  });

  it('replaces the user with PUT, resetting what is omitted', async () => {
    const replaced = await scim('PUT', `/Users/${userId}`, {
      schemas: [userSchema],
      userName: 'ada.lovelace@example.com',
      name: { givenName: 'Augusta Ada', familyName: 'King' },
    });
    expect(replaced.status).toBe(200);
    expect(replaced.body).toMatchObject({
      name: { givenName: 'Augusta Ada', familyName: 'King' },
      emails: [],
      active: true,
    });
    expect(replaced.body).not.toHaveProperty('externalId');
    expect(replaced.headers.get('etag')).toBe('W/"2"');
  });

  it("deactivates with Okta's path-less replace, cutting the user's OAuth access at once, and reactivates with Entra's \"True\"", async () => {
    const token = await sign({ sub: userId, scope: 'guard:read' });
    const before = await fetch(`${system.url}/v1/guard/projects`, {
      headers: { authorization: `Bearer ${token}` },
    });
    expect(before.status).toBe(200); // cached by the gateway from here on

    const off = await scim('PATCH', `/Users/${userId}`, patch({ op: 'replace', value: { active: false } }));
    expect(off.status).toBe(200);
    expect(off.body.active).toBe(false);
    await eventually(async () => {
      const after = await fetch(`${system.url}/v1/guard/projects`, {
        headers: { authorization: `Bearer ${token}` },
      });
      return after.status === 401 ? true : undefined;
    }, 5_000);

    const on = await scim(
      'PATCH',
      `/Users/${userId}`,
      patch({ op: 'Replace', path: 'active', value: 'True' }),
    );
    expect(on.body.active).toBe(true);
    // The gateway remembers refused tokens as unknown for 5 s; the reactivation event makes it forget
    // them, well within that.
    await eventually(async () => {
      const again = await fetch(`${system.url}/v1/guard/projects`, {
        headers: { authorization: `Bearer ${token}` },
      });
      return again.status === 200 ? true : undefined;
    }, 2_000);
  });

  it('updates with Entra\'s paths: emails[type eq "work"].value and name.familyName', async () => {
    const updated = await scim(
      'PATCH',
      `/Users/${userId}`,
      patch(
        { op: 'Replace', path: 'emails[type eq "work"].value', value: 'ada@example.com' },
        { op: 'Replace', path: 'name.familyName', value: 'Byron' },
      ),
    );
    expect(updated.status).toBe(200);
    expect(updated.body.emails).toEqual([{ value: 'ada@example.com', type: 'work' }]);
    expect(updated.body.name.familyName).toBe('Byron');
  });

  it('creates a group with members, which read back with their userName', async () => {
    otherId = (await scim('POST', '/Users', { schemas: [userSchema], userName: 'charles@example.com' })).body
      .id;
    const group = await scim('POST', '/Groups', {
      schemas: [groupSchema],
      displayName: 'FinOps',
      members: [{ value: userId }],
    });
    expect(group.status).toBe(201);
    groupId = group.body.id;
    expect(group.body.members).toEqual([
      expect.objectContaining({ value: userId, display: 'ada.lovelace@example.com' }),
    ]);
    const user = await scim('GET', `/Users/${userId}`);
    expect(user.body.groups).toEqual([expect.objectContaining({ value: groupId, display: 'FinOps' })]);
    expectScimError(
      await scim('POST', '/Groups', { schemas: [groupSchema], displayName: 'finops' }),
      409,
      'uniqueness',
    );
  });

  it('adds and removes members the ways Okta and Entra send them', async () => {
    const added = await scim(
      'PATCH',
      `/Groups/${groupId}`,
      patch({ op: 'Add', path: 'members', value: [{ $ref: null, value: otherId }] }),
    );
    expect(added.body.members.map((m: { value: string }) => m.value)).toEqual([userId, otherId]);
    const removedOkta = await scim(
      'PATCH',
      `/Groups/${groupId}`,
      patch({ op: 'remove', path: `members[value eq "${userId}"]` }),
    );
    expect(removedOkta.body.members.map((m: { value: string }) => m.value)).toEqual([otherId]);
    const removedEntra = await scim(
      'PATCH',
      `/Groups/${groupId}`,
      patch({ op: 'Remove', path: 'members', value: [{ $ref: null, value: otherId }] }),
    );
    expect(removedEntra.body.members).toEqual([]);
    const renamed = await scim(
      'PATCH',
      `/Groups/${groupId}`,
      patch({ op: 'replace', value: { id: groupId, displayName: 'FinOps Team' } }),
    );
    expect(renamed.body.displayName).toBe('FinOps Team');
    const quiet = await fetch(`${system.url}/scim/v2/Groups/${groupId}?attributes=`, {
      method: 'PATCH',
      headers: { authorization: `Bearer ${scimToken}`, 'content-type': 'application/scim+json' },
      body: JSON.stringify(patch({ op: 'replace', path: 'externalId', value: 'entra-1' })),
    });
    expect(quiet.status).toBe(204);
    expect(await quiet.text()).toBe('');
    const withoutMembers = await scim('GET', `/Groups/${groupId}?excludedAttributes=members`);
    expect(withoutMembers.body).not.toHaveProperty('members');
    expect(withoutMembers.body.displayName).toBe('FinOps Team');
  });

  it('refuses a member that is not a user of the team, changing nothing', async () => {
    const refused = await scim(
      'PATCH',
      `/Groups/${groupId}`,
      patch({ op: 'add', path: 'members', value: [{ value: '7d1f1bb0-0000-4000-8000-000000000000' }] }),
    );
    expectScimError(refused, 400, 'invalidValue');
    expect((await scim('GET', `/Groups/${groupId}`)).body.members).toEqual([]);
  });

  it('deletes the group (204), after which it is 404', async () => {
    const deleted = await fetch(`${system.url}/scim/v2/Groups/${groupId}`, {
      method: 'DELETE',
      headers: { authorization: `Bearer ${scimToken}` },
    });
    expect(deleted.status).toBe(204);
    expectScimError(await scim('GET', `/Groups/${groupId}`), 404);
  });

  it('deletes a user for good as Entra does: 204, access cut at once, then 404 and absent, userName free', async () => {
    const token = await sign({ sub: otherId, scope: 'guard:read' });
    const before = await fetch(`${system.url}/v1/guard/projects`, {
      headers: { authorization: `Bearer ${token}` },
    });
    expect(before.status).toBe(200); // cached by the gateway from here on

    const deleted = await fetch(`${system.url}/scim/v2/Users/${otherId}`, {
      method: 'DELETE',
      headers: { authorization: `Bearer ${scimToken}` },
    });
    expect(deleted.status).toBe(204);
    expect(await deleted.text()).toBe('');
    await eventually(async () => {
      const after = await fetch(`${system.url}/v1/guard/projects`, {
        headers: { authorization: `Bearer ${token}` },
      });
      return after.status === 401 ? true : undefined;
    }, 5_000);

    expectScimError(await scim('GET', `/Users/${otherId}`), 404);
    expectScimError(await scim('DELETE', `/Users/${otherId}`), 404);
    const listed = await scim(
      'GET',
      `/Users?filter=${encodeURIComponent('userName eq "charles@example.com"')}`,
    );
    expect(listed.body.totalResults).toBe(0);
    const again = await scim('POST', '/Users', { schemas: [userSchema], userName: 'Charles@example.com' });
    expect(again.status).toBe(201);
    expect(again.body.id).not.toBe(otherId);
    // The new user with the same userName signs in; the deleted one stays out.
    const fresh = await sign({ sub: again.body.id, scope: 'guard:read' });
    expect(
      (await fetch(`${system.url}/v1/guard/projects`, { headers: { authorization: `Bearer ${fresh}` } }))
        .status,
    ).toBe(200);
    const byEmail = await sign({ sub: 'unknown-sub', email: 'charles@example.com', scope: 'guard:read' });
    expect(
      (await fetch(`${system.url}/v1/guard/projects`, { headers: { authorization: `Bearer ${byEmail}` } }))
        .status,
    ).toBe(200);
  });
});

describe('filters and paging', () => {
  beforeAll(async () => {
    for (const [userName, familyName] of [
      ['grace.hopper@navy.example', 'Hopper'],
      ['grace.kelly@film.example', 'Kelly'],
      ['alan.turing@bletchley.example', 'Turing'],
    ]) {
      await scim('POST', '/Users', {
        schemas: [userSchema],
        userName,
        name: { familyName },
        active: userName !== 'grace.kelly@film.example',
      });
    }
  });

  it.each([
    ['userName sw "grace"', ['grace.hopper@navy.example', 'grace.kelly@film.example']],
    ['userName co "example" and active eq false', ['grace.kelly@film.example']],
    ['name.familyName sw "tur"', ['alan.turing@bletchley.example']],
    ['emails.value eq "ada@example.com"', ['ada.lovelace@example.com']],
    ['userName co "%"', []],
  ])('%s', async (filter, expected) => {
    const reply = await scim('GET', `/Users?filter=${encodeURIComponent(filter)}`);
    expect(reply.status).toBe(200);
    expect(reply.body.Resources.map((u: { userName: string }) => u.userName).sort()).toEqual(expected);
    expect(reply.body.totalResults).toBe(expected.length);
  });

  it.each(['userName gt "a"', 'userName eq "a" or active eq true', 'userName eq', 'nickName eq "x"'])(
    'answers 400 invalidFilter to %s',
    async (filter) => {
      expectScimError(await scim('GET', `/Users?filter=${encodeURIComponent(filter)}`), 400, 'invalidFilter');
    },
  );

  it('pages by startIndex and count in creation order, itemsPerPage being what is returned', async () => {
    const all = await scim('GET', '/Users?count=100');
    const total = all.body.totalResults as number;
    const page = await scim('GET', '/Users?startIndex=2&count=2');
    expect(page.body).toMatchObject({ startIndex: 2, itemsPerPage: 2, totalResults: total });
    expect(page.body.Resources.map((u: { id: string }) => u.id)).toEqual(
      all.body.Resources.slice(1, 3).map((u: { id: string }) => u.id),
    );
    const past = await scim('GET', `/Users?startIndex=${total + 5}`);
    expect(past.body).toMatchObject({ itemsPerPage: 0, Resources: [] });
    expect((await scim('GET', '/Users?count=500')).body.itemsPerPage).toBe(Math.min(total, 100));
    const only = await scim('GET', '/Users?attributes=userName&count=1');
    expect(Object.keys(only.body.Resources[0]).sort()).toEqual(['id', 'schemas', 'userName']);
  });
});

describe('bad input changes nothing', () => {
  it.each([
    ['malformed JSON', { raw: '{"userName": ' }, 400, 'invalidSyntax'],
    [
      'a NUL character in externalId',
      { body: { schemas: [userSchema], userName: 'nul1@example.com', externalId: 'a\u0000b' } },
      400,
      'invalidValue',
    ],
    [
      'a NUL character in displayName',
      { body: { schemas: [userSchema], userName: 'nul2@example.com', displayName: 'Ada\u0000' } },
      400,
      'invalidValue',
    ],
    [
      'a userName longer than 256 characters, counted as characters',
      { body: { schemas: [userSchema], userName: '😀'.repeat(257) } },
      400,
      'invalidValue',
    ],
    [
      'a missing userName',
      { body: { schemas: [userSchema], name: { givenName: 'x' } } },
      400,
      'invalidValue',
    ],
    ['a userName of the wrong type', { body: { schemas: [userSchema], userName: 42 } }, 400, 'invalidValue'],
    [
      'an unknown attribute',
      { body: { schemas: [userSchema], userName: 'x@example.com', favouriteColour: 'red' } },
      400,
      'invalidPath',
    ],
    [
      'a __proto__ key',
      {
        raw: '{"schemas":["urn:ietf:params:scim:schemas:core:2.0:User"],"userName":"p@example.com","__proto__":{"admin":true}}',
      },
      400,
      'invalidValue',
    ],
    [
      'a body over 1 MiB',
      { body: { schemas: [userSchema], userName: 'big@example.com', displayName: 'x'.repeat(1_100_000) } },
      413,
      undefined,
    ],
  ])('%s', async (_case, input: { body?: unknown; raw?: string }, status, scimType) => {
    const before = await countUsers();
    const reply = await scim('POST', '/Users', input.body, { raw: input.raw });
    expectScimError(reply, status, scimType);
    expect(await countUsers()).toBe(before);
    expect(({} as Record<string, unknown>).admin).toBeUndefined();
  });

  it.each(['/Users', '/Groups'])(
    'answers 400 invalidFilter to an emoji filter on %s, quoting it whole, and keeps serving',
    async (path) => {
      const reply = await scim('GET', `${path}?filter=%F0%9F%98%80`);
      expectScimError(reply, 400, 'invalidFilter');
      expect(reply.body.detail).toContain("unexpected character '😀' at position 1");
      expect((await scim('GET', `${path}?count=1`)).status).toBe(200);
    },
  );

  it('answers 404 with the SCIM body for an unknown id and an unknown path', async () => {
    expectScimError(await scim('GET', '/Users/2819c223-7f76-453a-919d-413861904646'), 404);
    const malformed = await scim('GET', '/Users/not-a-uuid%F0%9F%98%80');
    expectScimError(malformed, 404);
    expect(malformed.body.detail).not.toContain('not-a-uuid'); // what is no id is not echoed
    expectScimError(await scim('GET', '/Nothing'), 404);
  });

  it('answers 401 with the SCIM body to a bad token, and 403 to a team not on the Enterprise plan', async () => {
    expectScimError(await scim('GET', '/Users', undefined, { token: 'cg_scim_nope' }), 401);
    expectScimError(await scim('GET', '/Users', undefined, { token: teamPlanToken }), 403);
  });

  it('answers 412 to a PATCH whose If-Match is stale', async () => {
    const user = (await scim('POST', '/Users', { schemas: [userSchema], userName: 'etag@example.com' })).body;
    await scim('PATCH', `/Users/${user.id}`, patch({ op: 'replace', path: 'displayName', value: 'one' }));
    const stale = await scim(
      'PATCH',
      `/Users/${user.id}`,
      patch({ op: 'replace', path: 'displayName', value: 'two' }),
      {
        headers: { 'if-match': 'W/"1"' },
      },
    );
    expectScimError(stale, 412);
    expect((await scim('GET', `/Users/${user.id}`)).body.displayName).toBe('one');
  });
});

describe('rate limits', () => {
  it("answers past the team's SCIM limit with 429, Retry-After and the SCIM error body", async () => {
    const statuses: number[] = [];
    let last: Reply | undefined;
    for (let i = 0; i < 4; i++) {
      last = await scim('GET', '/Users?count=1', undefined, { token: throttledToken });
      statuses.push(last.status);
    }
    expect(statuses).toEqual([200, 200, 200, 429]);
    expectScimError(last!, 429);
    expect(Number(last!.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    expect(last!.headers.get('ratelimit-policy')).toContain('"scim";q=3');
  });
});

describe('discovery', () => {
  it('describes what is supported', async () => {
    const config = await scim('GET', '/ServiceProviderConfig');
    expect(config.status).toBe(200);
    expect(config.body).toMatchObject({
      patch: { supported: true },
      bulk: { supported: false },
      filter: { supported: true, maxResults: 100 },
      etag: { supported: true },
    });
    const schemas = await scim('GET', '/Schemas');
    expect(schemas.body.Resources.map((s: { id: string }) => s.id)).toEqual(
      expect.arrayContaining([userSchema, groupSchema]),
    );
    const types = await scim('GET', '/ResourceTypes/User');
    expect(types.body).toMatchObject({ id: 'User', endpoint: '/Users', schema: userSchema });
  });
});

describe('what the served OpenAPI document says a SCIM answer is', () => {
  /** A validator for one of the served document's component schemas. */
  async function documented(name: string) {
    const document = (await (await fetch(`${system.url}/v1/openapi.json`)).json()) as object;
    const ajv = new Ajv2020({ strict: false, allErrors: true, validateSchema: false });
    addFormats(ajv);
    ajv.addSchema(document, 'openapi');
    const validate = ajv.compile({ $ref: `openapi#/components/schemas/${name}` });
    return (body: unknown) => (validate(body) ? [] : ajv.errorsText(validate.errors).split(', '));
  }

  it('accepts a meta that attributes or excludedAttributes narrowed (meta sub-attributes are returned: default)', async () => {
    const created = await scim('POST', '/Users', {
      schemas: [userSchema],
      userName: 'meta-narrowed@example.com',
    });
    expect(created.status).toBe(201);
    const group = await scim('POST', '/Groups', { schemas: [groupSchema], displayName: 'meta-narrowed' });
    expect(group.status).toBe(201);
    const user = await documented('ScimUser');
    const users = await documented('ScimUserListResponse');
    const groupSchemaOf = await documented('ScimGroup');
    const groups = await documented('ScimGroupListResponse');

    const only = await scim('GET', `/Users/${created.body.id}?attributes=meta.created`);
    expect(only.body).toEqual({
      schemas: [userSchema],
      id: created.body.id,
      meta: { created: expect.any(String) },
    });
    expect(user(only.body)).toEqual([]);
    const without = await scim('GET', '/Users?excludedAttributes=meta.created');
    expect(without.body.Resources[0].meta).not.toHaveProperty('created');
    expect(users(without.body)).toEqual([]);
    const groupOnly = await scim('GET', `/Groups/${group.body.id}?attributes=meta.location`);
    expect(groupOnly.body.meta).toEqual({ location: expect.any(String) });
    expect(groupSchemaOf(groupOnly.body)).toEqual([]);
    expect(groups((await scim('GET', '/Groups?excludedAttributes=meta.created')).body)).toEqual([]);
  });

  it('answers 404 with the SCIM body, not the list, to a schema or resource type id that is only U+FEFF', async () => {
    for (const endpoint of ['Schemas', 'ResourceTypes']) {
      expectScimError(await scim('GET', `/${endpoint}/%EF%BB%BF`), 404);
    }
    // The mark is part of the id, so it is not the User schema either.
    expectScimError(await scim('GET', `/Schemas/%EF%BB%BF${userSchema}`), 404);
    expectScimError(await scim('GET', '/ResourceTypes/%EF%BB%BFUser'), 404);
  });
});

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '@costgov/config';
import { identity } from '@costgov/contracts';
import { createLogger } from '@costgov/log';
import { createRpcClient } from '@costgov/rpc';
import { freshDb, testBus } from '@costgov/testing';
import { startSystem, systemConfig, type RunningSystem } from '../src/system';

/**
 * The request sequences identity providers really run, replayed over REST through the gateway, one table
 * per provider: Microsoft Entra (its SCIM validator and reference Postman collection) and Okta (its SCIM
 * 2.0 SPEC test and documented requests). Each row is one request and what must come back; rows run in
 * order and share what earlier rows created (ids, ETags), as the providers' own suites do.
 */

const logger = createLogger('test', 'silent');
const userSchema = 'urn:ietf:params:scim:schemas:core:2.0:User';
const groupSchema = 'urn:ietf:params:scim:schemas:core:2.0:Group';
const enterpriseSchema = 'urn:ietf:params:scim:schemas:extension:enterprise:2.0:User';
const patchSchema = 'urn:ietf:params:scim:api:messages:2.0:PatchOp';
const listSchema = 'urn:ietf:params:scim:api:messages:2.0:ListResponse';
const errorSchema = 'urn:ietf:params:scim:api:messages:2.0:Error';

let system: RunningSystem;
const tokens: Record<'entra' | 'okta', string> = { entra: '', okta: '' };

/* eslint-disable @typescript-eslint/no-explicit-any */
interface Reply {
  status: number;
  headers: Headers;
  text: string;
  body: any;
}

/** What earlier rows saved for later ones (ids, ETags), by name. */
type Saved = Record<string, string>;

interface Step {
  name: string;
  method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';
  path: (s: Saved) => string;
  body?: (s: Saved) => unknown;
  headers?: (s: Saved) => Record<string, string>;
  status: number;
  /** Checked with toMatchObject. */
  expected?: (s: Saved) => unknown;
  /** Further checks, and what to save for later rows. */
  then?: (reply: Reply, s: Saved) => void;
}
/* eslint-enable @typescript-eslint/no-explicit-any */

const q = (filter: string) => encodeURIComponent(filter);
const patch = (...Operations: unknown[]) => ({ schemas: [patchSchema], Operations });
const scimError = (status: number, scimType?: string) => ({
  schemas: [errorSchema],
  status: String(status),
  ...(scimType ? { scimType } : {}),
});
const idsOf = (body: { Resources: Array<{ id: string }> }) => body.Resources.map((r) => r.id);

async function send(token: string, step: Step, saved: Saved): Promise<Reply> {
  const body = step.body?.(saved);
  const response = await fetch(`${system.url}/scim/v2${step.path(saved)}`, {
    method: step.method,
    headers: {
      authorization: `Bearer ${token}`,
      accept: 'application/scim+json',
      ...(body !== undefined ? { 'content-type': 'application/scim+json; charset=utf-8' } : {}),
      ...step.headers?.(saved),
    },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await response.text();
  return {
    status: response.status,
    headers: response.headers,
    text,
    body: text ? JSON.parse(text) : undefined,
  };
}

function replay(provider: 'entra' | 'okta', steps: Step[]) {
  const saved: Saved = {};
  for (const step of steps) {
    it(`${step.method} ${step.name}`, async () => {
      const reply = await send(tokens[provider], step, saved);
      expect(reply.status, reply.text).toBe(step.status);
      if (reply.text) expect(reply.headers.get('content-type')).toMatch(/application\/scim\+json/);
      if (step.expected) expect(reply.body).toMatchObject(step.expected(saved) as object);
      step.then?.(reply, saved);
    });
  }
}

beforeAll(async () => {
  const config = loadConfig(systemConfig, { PORT: '0', HOST: '127.0.0.1', DATA_DIR: 'memory' });
  system = await startSystem(config, logger, {
    env: { GUARD_BOOTSTRAP_API_KEY: 'cg_live_scimidptestbootstrapkey0000000000' },
    quietBootstrap: true,
    anyPorts: true,
    openDb: (service) => freshDb(service),
    bus: await testBus(logger),
  });
  const identityService = system.services.find((s) => s.name === 'identity')!;
  const client = createRpcClient(identity.IdentityService, `127.0.0.1:${identityService.port}`);
  // One team per provider, as one tenant connects one identity provider.
  for (const provider of ['entra', 'okta'] as const) {
    const team = await client.createTeam({ name: `${provider}-tenant`, plan: 'enterprise' });
    tokens[provider] = (await client.createScimToken({ name: provider }, { teamId: team.id })).secret;
  }
  client.close();
}, 180_000); // starting every service is slow on a loaded machine (PGlite migrations)

afterAll(async () => {
  await system?.stop();
});

// Microsoft Entra: the reference Postman collection's order (discovery, users, groups, deletion), with the
// attribute shapes of the SCIM validator (every name sub-attribute, manager as a bare id, value paths).
const entraUser = {
  schemas: [userSchema, enterpriseSchema],
  externalId: 'a3a49a39-0d4b-4cd0-9f7e-2e0c2c6a63b1',
  userName: 'Ryan.Leenay@contoso.onmicrosoft.com',
  active: true,
  displayName: 'Ryan Leenay',
  title: 'Tour Guide',
  preferredLanguage: 'en-US',
  name: {
    formatted: 'Mr. Ryan J Leenay III',
    familyName: 'Leenay',
    givenName: 'Ryan',
    middleName: 'J',
    honorificPrefix: 'Mr.',
    honorificSuffix: 'III',
  },
  emails: [{ primary: true, type: 'work', value: 'ryan@contoso.com' }],
  phoneNumbers: [{ type: 'work', value: '+1 425 555 0100' }],
  addresses: [{ type: 'work', country: 'US', primary: false }],
  [enterpriseSchema]: { employeeNumber: '701984', department: 'Tour Operations' },
};

describe('Microsoft Entra', () => {
  replay('entra', [
    {
      name: '/Users (empty)',
      method: 'GET',
      path: () => '/Users',
      status: 200,
      expected: () => ({ schemas: [listSchema], totalResults: 0, Resources: [] }),
    },
    {
      name: '/Groups (empty)',
      method: 'GET',
      path: () => '/Groups',
      status: 200,
      expected: () => ({ totalResults: 0 }),
    },
    {
      name: '/ResourceTypes',
      method: 'GET',
      path: () => '/ResourceTypes',
      status: 200,
      then: (r) => expect(r.body.Resources[0].endpoint).toBe('/Users'),
    },
    {
      name: '/Schemas lists every name sub-attribute and manager as complex',
      method: 'GET',
      path: () => '/Schemas',
      status: 200,
      then: (r) => {
        const user = r.body.Resources.find((s: { id: string }) => s.id === userSchema);
        const name = user.attributes.find((a: { name: string }) => a.name === 'name');
        expect(name.subAttributes.map((a: { name: string }) => a.name).sort()).toEqual([
          'familyName',
          'formatted',
          'givenName',
          'honorificPrefix',
          'honorificSuffix',
          'middleName',
        ]);
        const enterprise = r.body.Resources.find((s: { id: string }) => s.id === enterpriseSchema);
        expect(enterprise.attributes.find((a: { name: string }) => a.name === 'manager').type).toBe(
          'complex',
        );
      },
    },
    {
      name: '/Users with every name sub-attribute',
      method: 'POST',
      path: () => '/Users',
      body: () => entraUser,
      status: 201,
      expected: () => ({ userName: entraUser.userName, name: entraUser.name, active: true }),
      then: (r, s) => {
        s.user = r.body.id;
        s.etag = r.headers.get('etag')!;
      },
    },
    {
      name: '/Users (the manager)',
      method: 'POST',
      path: () => '/Users',
      body: () => ({
        schemas: [userSchema],
        userName: 'Manager@contoso.onmicrosoft.com',
        displayName: 'Boss',
        externalId: 'mgr-1',
      }),
      status: 201,
      then: (r, s) => (s.manager = r.body.id),
    },
    {
      name: '/Users again, in another case: 409 uniqueness',
      method: 'POST',
      path: () => '/Users',
      body: () => ({ ...entraUser, userName: entraUser.userName.toUpperCase() }),
      status: 409,
      expected: () => scimError(409, 'uniqueness'),
    },
    {
      name: '/Users with a null middleName and honorificPrefix',
      method: 'POST',
      path: () => '/Users',
      body: () => ({
        schemas: [userSchema],
        userName: 'nulls@contoso.com',
        name: { givenName: 'N', middleName: null, honorificPrefix: null },
      }),
      status: 201,
      expected: () => ({ name: { givenName: 'N' } }),
      then: (r) => expect(r.body.name).not.toHaveProperty('middleName'),
    },
    {
      name: '/Users/:id',
      method: 'GET',
      path: (s) => `/Users/${s.user}`,
      status: 200,
      expected: () => ({ name: entraUser.name }),
    },
    ...(
      [
        ['userName eq', `userName eq "${entraUser.userName.toLowerCase()}"`],
        ['externalId eq', `externalId eq "${entraUser.externalId}"`],
        ['displayName eq', 'displayName eq "Ryan Leenay"'],
        ['a value path with a sub-attribute', 'emails[type eq "work"].value eq "ryan@contoso.com"'],
        ['a value path with and', 'emails[type eq "work" and value co "@contoso"]'],
        ['name.middleName', 'name.middleName eq "j"'],
        ['name.honorificSuffix', 'name.honorificSuffix eq "III"'],
        ['name.formatted', 'name.formatted co "Leenay"'],
      ] as const
    ).map(([name, filter]): Step => ({
      name: `/Users?filter= ${name}`,
      method: 'GET',
      path: () => `/Users?filter=${q(filter)}`,
      status: 200,
      expected: () => ({ totalResults: 1 }),
      then: (r, s) => expect(idsOf(r.body)).toEqual([s.user]),
    })),
    {
      name: '/Users?filter= a value path that matches no one',
      method: 'GET',
      path: () => `/Users?filter=${q('emails[type eq "home"].value eq "ryan@contoso.com"')}`,
      status: 200,
      expected: () => ({ totalResults: 0, Resources: [] }),
    },
    {
      name: '/Users/:id?attributes=userName keeps id and schemas (returned: always)',
      method: 'GET',
      path: (s) => `/Users/${s.user}?attributes=userName`,
      status: 200,
      then: (r) => expect(Object.keys(r.body).sort()).toEqual(['id', 'schemas', 'userName']),
    },
    {
      name: '/Users/:id with If-None-Match of the current ETag: 304, no body',
      method: 'GET',
      path: (s) => `/Users/${s.user}`,
      headers: (s) => ({ 'if-none-match': s.etag! }),
      status: 304,
      then: (r, s) => {
        expect(r.text).toBe('');
        expect(r.headers.get('etag')).toBe(s.etag);
      },
    },
    {
      name: '/Users/:id with If-None-Match of another ETag: 200',
      method: 'GET',
      path: (s) => `/Users/${s.user}`,
      headers: () => ({ 'if-none-match': 'W/"999"' }),
      status: 200,
    },
    {
      name: '/Users/:id: name sub-attributes, a work e-mail by value path, manager as a bare id',
      method: 'PATCH',
      path: (s) => `/Users/${s.user}`,
      body: (s) =>
        patch(
          { op: 'Replace', path: 'name.middleName', value: 'James' },
          { op: 'Replace', path: 'name.honorificPrefix', value: 'Dr.' },
          { op: 'Remove', path: 'name.honorificSuffix' },
          { op: 'Replace', path: 'emails[type eq "work"].value', value: 'ryan.leenay@contoso.com' },
          { op: 'Add', path: `${enterpriseSchema}:manager`, value: s.manager },
          { op: 'Replace', path: 'title', value: 'Senior Tour Guide' },
        ),
      status: 200,
      expected: (s) => ({
        name: { middleName: 'James', honorificPrefix: 'Dr.', givenName: 'Ryan' },
        emails: [{ type: 'work', value: 'ryan.leenay@contoso.com', primary: true }],
        [enterpriseSchema]: {
          department: 'Tour Operations',
          manager: {
            value: s.manager,
            $ref: `${system.url}/scim/v2/Users/${s.manager}`,
            displayName: 'Boss',
          },
        },
      }),
      then: (r, s) => {
        expect(r.body.name).not.toHaveProperty('honorificSuffix');
        s.etag = r.headers.get('etag')!;
      },
    },
    {
      name: '/Users/:id: a path-less replace with dotted name keys and a manager object',
      method: 'PATCH',
      path: (s) => `/Users/${s.user}`,
      body: (s) =>
        patch({
          op: 'replace',
          value: {
            'name.honorificSuffix': 'Jr.',
            'name.middleName': null,
            [`${enterpriseSchema}:manager`]: { value: s.manager },
          },
        }),
      status: 200,
      expected: (s) => ({
        name: { honorificSuffix: 'Jr.' },
        [enterpriseSchema]: { manager: { value: s.manager } },
      }),
      then: (r) => expect(r.body.name).not.toHaveProperty('middleName'),
    },
    {
      name: '/Groups',
      method: 'POST',
      path: () => '/Groups',
      body: () => ({
        schemas: [groupSchema],
        externalId: 'grp-ext-1',
        displayName: 'Tour Guides',
        members: [],
      }),
      status: 201,
      then: (r, s) => {
        s.group = r.body.id;
        s.groupEtag = r.headers.get('etag')!;
      },
    },
    {
      name: '/Groups/:id with If-None-Match of the current ETag: 304',
      method: 'GET',
      path: (s) => `/Groups/${s.group}`,
      headers: (s) => ({ 'if-none-match': s.groupEtag! }),
      status: 304,
      then: (r) => expect(r.text).toBe(''),
    },
    {
      name: '/Groups?filter=displayName eq&excludedAttributes=members',
      method: 'GET',
      path: () => `/Groups?filter=${q('displayName eq "Tour Guides"')}&excludedAttributes=members`,
      status: 200,
      then: (r, s) => {
        expect(idsOf(r.body)).toEqual([s.group]);
        expect(r.body.Resources[0]).not.toHaveProperty('members');
      },
    },
    {
      name: '/Groups/:id: add two members',
      method: 'PATCH',
      path: (s) => `/Groups/${s.group}`,
      body: (s) => patch({ op: 'Add', path: 'members', value: [{ value: s.user }, { value: s.manager }] }),
      status: 200,
      then: (r, s) =>
        expect(r.body.members.map((m: { value: string }) => m.value).sort()).toEqual(
          [s.user, s.manager].sort(),
        ),
    },
    {
      name: '/Groups/:id: PUT with members carrying $ref, display, type and displayName',
      method: 'PUT',
      path: (s) => `/Groups/${s.group}`,
      body: (s) => ({
        schemas: [groupSchema],
        externalId: 'grp-ext-1',
        displayName: 'Tour Guides',
        members: [
          {
            value: s.user,
            $ref: `${system.url}/scim/v2/Users/${s.user}`,
            display: 'Ryan Leenay',
            type: 'User',
            displayName: 'Ryan Leenay',
          },
        ],
      }),
      status: 200,
      then: (r, s) => expect(r.body.members.map((m: { value: string }) => m.value)).toEqual([s.user]),
    },
    {
      name: '/Groups/:id: add a member with its displayName',
      method: 'PATCH',
      path: (s) => `/Groups/${s.group}`,
      body: (s) =>
        patch({ op: 'Add', path: 'members', value: [{ value: s.manager, displayName: 'Manager' }] }),
      status: 200,
      then: (r, s) =>
        expect(r.body.members.map((m: { value: string }) => m.value).sort()).toEqual(
          [s.user, s.manager].sort(),
        ),
    },
    {
      name: '/Groups?filter=members[value eq id]',
      method: 'GET',
      path: (s) => `/Groups?filter=${q(`members[value eq "${s.manager}"]`)}`,
      status: 200,
      then: (r, s) => expect(idsOf(r.body)).toEqual([s.group]),
    },
    {
      name: '/Users/:id: disable with "False"',
      method: 'PATCH',
      path: (s) => `/Users/${s.manager}`,
      body: () => patch({ op: 'Replace', path: 'active', value: 'False' }),
      status: 200,
      expected: () => ({ active: false }),
    },
    {
      name: '/Users/:id: deleted for good',
      method: 'DELETE',
      path: (s) => `/Users/${s.user}`,
      status: 204,
      then: (r) => expect(r.text).toBe(''),
    },
    {
      name: '/Users/:id after deletion: 404',
      method: 'GET',
      path: (s) => `/Users/${s.user}`,
      status: 404,
      expected: () => scimError(404),
    },
    {
      name: '/Users/:id after deletion: 404',
      method: 'PATCH',
      path: (s) => `/Users/${s.user}`,
      body: () => patch({ op: 'replace', path: 'active', value: true }),
      status: 404,
      expected: () => scimError(404),
    },
    {
      name: '/Users/:id after deletion: 404',
      method: 'PUT',
      path: (s) => `/Users/${s.user}`,
      body: () => ({ schemas: [userSchema], userName: entraUser.userName }),
      status: 404,
    },
    {
      name: '/Users/:id after deletion: 404',
      method: 'DELETE',
      path: (s) => `/Users/${s.user}`,
      status: 404,
      expected: () => scimError(404),
    },
    {
      name: '/Users?filter= after deletion finds no one',
      method: 'GET',
      path: () => `/Users?filter=${q(`externalId eq "${entraUser.externalId}"`)}`,
      status: 200,
      expected: () => ({ totalResults: 0, Resources: [] }),
    },
    {
      name: '/Users after deletion lists the others only',
      method: 'GET',
      path: () => '/Users',
      status: 200,
      expected: () => ({ totalResults: 2 }),
      then: (r, s) => expect(idsOf(r.body)).not.toContain(s.user),
    },
    {
      name: '/Groups/:id no longer lists the deleted user',
      method: 'GET',
      path: (s) => `/Groups/${s.group}`,
      status: 200,
      then: (r, s) => expect(r.body.members.map((m: { value: string }) => m.value)).toEqual([s.manager]),
    },
    {
      name: '/Users/:id of the manager: the deleted report is gone, the manager stays',
      method: 'GET',
      path: (s) => `/Users/${s.manager}`,
      status: 200,
      then: (r, s) => expect(r.body.groups.map((g: { value: string }) => g.value)).toEqual([s.group]),
    },
    {
      name: '/Users with the deleted userName: free again',
      method: 'POST',
      path: () => '/Users',
      body: () => entraUser,
      status: 201,
      then: (r, s) => expect(r.body.id).not.toBe(s.user),
    },
    {
      name: '/Groups/:id: a member that was deleted cannot be added back',
      method: 'PATCH',
      path: (s) => `/Groups/${s.group}`,
      body: (s) => patch({ op: 'Add', path: 'members', value: [{ value: s.user }] }),
      status: 400,
      expected: () => scimError(400, 'invalidValue'),
    },
    { name: '/Groups/:id', method: 'DELETE', path: (s) => `/Groups/${s.group}`, status: 204 },
    {
      name: '/Groups/:id after deletion: 404',
      method: 'GET',
      path: (s) => `/Groups/${s.group}`,
      status: 404,
    },
  ]);
});

// Okta: the SCIM 2.0 SPEC test's requests and the bodies of Okta's SCIM protocol reference.
const oktaUser = {
  schemas: [userSchema],
  userName: 'Test.User@example.com',
  name: { givenName: 'Test', middleName: 'Q', familyName: 'User' },
  emails: [{ primary: true, value: 'test.user@example.com', type: 'work' }],
  displayName: 'Test User',
  locale: 'en-US',
  externalId: '00ujl29u0le5T6Aj10h7',
  groups: [],
  password: '1mz050nq',
  active: true,
};

describe('Okta', () => {
  replay('okta', [
    {
      name: '/Users?count=1&startIndex=1',
      method: 'GET',
      path: () => '/Users?count=1&startIndex=1',
      status: 200,
      expected: () => ({ schemas: [listSchema], startIndex: 1, Resources: [] }),
    },
    {
      name: '/Users?filter=userName eq (unknown)&startIndex=1&count=100',
      method: 'GET',
      path: () => `/Users?filter=${q('userName eq "nobody@example.com"')}&startIndex=1&count=100`,
      status: 200,
      expected: () => ({ totalResults: 0, itemsPerPage: 0, Resources: [] }),
    },
    {
      name: '/Users',
      method: 'POST',
      path: () => '/Users',
      body: () => oktaUser,
      status: 201,
      expected: () => ({ userName: oktaUser.userName, name: oktaUser.name, active: true }),
      then: (r, s) => {
        s.user = r.body.id;
        expect(r.body).not.toHaveProperty('password');
      },
    },
    {
      name: '/Users/:id',
      method: 'GET',
      path: (s) => `/Users/${s.user}`,
      status: 200,
      expected: (s) => ({ id: s.user, userName: oktaUser.userName }),
    },
    {
      name: '/Users?filter=userName eq, in another case',
      method: 'GET',
      path: () => `/Users?filter=${q('userName eq "test.user@EXAMPLE.com"')}&startIndex=1&count=100`,
      status: 200,
      then: (r, s) => expect(idsOf(r.body)).toEqual([s.user]),
    },
    {
      name: '/Users/:id (unknown)',
      method: 'GET',
      path: () => '/Users/010101c3-4c7d-4d91-9a41-d0e3d5d4a5ff',
      status: 404,
      expected: () => scimError(404),
    },
    {
      name: '/Users (duplicate)',
      method: 'POST',
      path: () => '/Users',
      body: () => oktaUser,
      status: 409,
      expected: () => scimError(409, 'uniqueness'),
    },
    {
      name: '/Users/:id: the documented PUT, with middleName',
      method: 'PUT',
      path: (s) => `/Users/${s.user}`,
      body: (s) => ({
        ...oktaUser,
        id: s.user,
        name: { givenName: 'Another', middleName: 'R', familyName: 'User' },
        meta: { resourceType: 'User' },
      }),
      status: 200,
      expected: () => ({ name: { givenName: 'Another', middleName: 'R', familyName: 'User' } }),
    },
    {
      name: '/Users/:id: deactivate with a path-less replace',
      method: 'PATCH',
      path: (s) => `/Users/${s.user}`,
      body: () => patch({ op: 'replace', value: { active: false } }),
      status: 200,
      expected: () => ({ active: false }),
    },
    {
      name: '/Users/:id: reactivate',
      method: 'PATCH',
      path: (s) => `/Users/${s.user}`,
      body: () => patch({ op: 'replace', value: { active: true } }),
      status: 200,
      expected: () => ({ active: true }),
    },
    {
      name: '/Groups',
      method: 'POST',
      path: () => '/Groups',
      body: (s) => ({
        schemas: [groupSchema],
        displayName: 'Test SCIMv2',
        members: [{ value: s.user, display: oktaUser.userName }],
      }),
      status: 201,
      then: (r, s) => (s.group = r.body.id),
    },
    {
      name: '/Groups?filter=displayName eq',
      method: 'GET',
      path: () => `/Groups?filter=${q('displayName eq "Test SCIMv2"')}&startIndex=1&count=100`,
      status: 200,
      then: (r, s) => expect(idsOf(r.body)).toEqual([s.group]),
    },
    {
      name: '/Groups/:id: rename with {id, displayName}',
      method: 'PATCH',
      path: (s) => `/Groups/${s.group}`,
      body: (s) => patch({ op: 'replace', value: { id: s.group, displayName: 'Test SCIMv2 renamed' } }),
      status: 200,
      expected: () => ({ displayName: 'Test SCIMv2 renamed' }),
    },
    {
      name: '/Groups/:id: remove members[value eq id]',
      method: 'PATCH',
      path: (s) => `/Groups/${s.group}`,
      body: (s) => patch({ op: 'remove', path: `members[value eq "${s.user}"]` }),
      status: 200,
      expected: () => ({ members: [] }),
    },
    {
      name: '/Groups/:id: add members',
      method: 'PATCH',
      path: (s) => `/Groups/${s.group}`,
      body: (s) =>
        patch({ op: 'add', path: 'members', value: [{ value: s.user, display: oktaUser.userName }] }),
      status: 200,
      then: (r, s) => expect(r.body.members.map((m: { value: string }) => m.value)).toEqual([s.user]),
    },
    {
      name: '/Groups/:id: PUT',
      method: 'PUT',
      path: (s) => `/Groups/${s.group}`,
      body: (s) => ({ schemas: [groupSchema], id: s.group, displayName: 'Test SCIMv2', members: [] }),
      status: 200,
      expected: () => ({ displayName: 'Test SCIMv2', members: [] }),
    },
    { name: '/Groups/:id', method: 'DELETE', path: (s) => `/Groups/${s.group}`, status: 204 },
  ]);
});

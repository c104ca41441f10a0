import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { scim } from '@costgov/contracts';
import type { Db } from '@costgov/db';
import type { RpcClient } from '@costgov/rpc';
import { body, json, startScim, type ScimUnderTest } from './fixture';

/**
 * SCIM PUT and PATCH that change nothing, as identity providers send them on every sync cycle (Okta pushes
 * the whole user with PUT; Entra patches attributes that are not stored and adds members already there):
 * the resource comes back as it is, with the same version and lastModified, and no event is published.
 */

const userSchema = 'urn:ietf:params:scim:schemas:core:2.0:User';
const groupSchema = 'urn:ietf:params:scim:schemas:core:2.0:Group';
const enterpriseSchema = 'urn:ietf:params:scim:schemas:extension:enterprise:2.0:User';
const patchSchema = 'urn:ietf:params:scim:api:messages:2.0:PatchOp';
const baseUrl = 'https://api.example.com/scim/v2';

let scimService: ScimUnderTest | undefined;
let db: Db;
let client: RpcClient<typeof scim.ScimService>;
let teamId = '';
// Moved on before every write: a write that saved would show a lastModified of its own.
let clock = Date.parse('2030-01-01T00:00:00.000Z');
const tick = () => (clock += 60_000);

const patch = (...Operations: unknown[]) => ({ schemas: [patchSchema], Operations });
const ctx = () => ({ teamId });
let serial = 0;

/** The user as Okta creates it and pushes it again, whole, with PUT on every profile sync. */
const oktaUser = (userName: string) => ({
  schemas: [userSchema],
  userName,
  name: { givenName: 'Test', middleName: 'Q', familyName: 'User' },
  // Keys in another order than jsonb returns them: the comparison must not depend on it.
  emails: [{ primary: true, value: userName.toLowerCase(), type: 'work' }],
  displayName: 'Test User',
  locale: 'en-US',
  externalId: `00u-${userName.toLowerCase()}`,
  groups: [],
  password: '1mz050nq',
  active: true,
});

/** The user as Entra's validator creates it: every name sub-attribute, attributes not stored, a manager. */
const entraUser = (userName: string, manager: string) => ({
  schemas: [userSchema, enterpriseSchema],
  externalId: `ext-${userName.toLowerCase()}`,
  userName,
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
  [enterpriseSchema]: { employeeNumber: '701984', department: 'Tour Operations', manager },
});

/** Per row: a user as its provider created it, a second user (its manager) and a group of the first. */
interface Fixture {
  userName: string;
  user: string;
  other: string;
  group: string;
  groupName: string;
}

async function created(reply: Promise<scim.ScimResource>): Promise<string> {
  return json((await reply).resourceJson).id;
}

async function fixture(provider: 'okta' | 'entra'): Promise<Fixture> {
  serial++;
  const userName = `Person.${serial}@Example.com`;
  const other = await created(
    client.createUser(
      { bodyJson: body({ schemas: [userSchema], userName: `boss.${serial}@example.com` }), baseUrl },
      ctx(),
    ),
  );
  const user = await created(
    client.createUser(
      { bodyJson: body(provider === 'okta' ? oktaUser(userName) : entraUser(userName, other)), baseUrl },
      ctx(),
    ),
  );
  const groupName = `Group ${serial}`;
  const group = await created(
    client.createGroup(
      {
        bodyJson: body({ schemas: [groupSchema], displayName: groupName, members: [{ value: user }] }),
        baseUrl,
      },
      ctx(),
    ),
  );
  return { userName, user, other, group, groupName };
}

type Kind = 'user' | 'group';
type Method = 'replace' | 'patch';

function write(kind: Kind, method: Method, id: string, value: unknown, ifMatch = '') {
  const request = { id, bodyJson: body(value), baseUrl, ifMatch };
  if (kind === 'user')
    return method === 'replace' ? client.replaceUser(request, ctx()) : client.patchUser(request, ctx());
  return method === 'replace' ? client.replaceGroup(request, ctx()) : client.patchGroup(request, ctx());
}

async function read(kind: Kind, id: string) {
  const reply =
    kind === 'user'
      ? await client.getUser({ id, baseUrl }, ctx())
      : await client.getGroup({ id, baseUrl }, ctx());
  return { etag: reply.etag, resource: json(reply.resourceJson) };
}

/** Every event of the outbox about one resource, oldest first. */
async function eventsAbout(id: string): Promise<string[]> {
  const { rows } = await db.query<{ type: string }>(
    'SELECT type FROM outbox WHERE subject = $1 ORDER BY created_at, id',
    [id],
  );
  return rows.map((row) => row.type);
}

beforeAll(async () => {
  scimService = await startScim('unchanged-writes', () => new Date(clock));
  ({ db, client, teamId } = scimService);
}, 180_000);

afterAll(async () => {
  await scimService?.stop();
});

interface Row {
  name: string;
  provider: 'okta' | 'entra';
  kind: Kind;
  method: Method;
  body: (f: Fixture) => unknown;
  /** The one event a real change publishes; absent when the write changes nothing. */
  publishes?: string;
}

const rows: Row[] = [
  {
    name: "Okta's PUT of the user exactly as created",
    provider: 'okta',
    kind: 'user',
    method: 'replace',
    body: (f) => ({ ...oktaUser(f.userName), id: f.user, meta: { resourceType: 'User' } }),
  },
  {
    name: "Okta's path-less replace of active true on an active user",
    provider: 'okta',
    kind: 'user',
    method: 'patch',
    body: () => patch({ op: 'replace', value: { active: true } }),
  },
  {
    name: 'a replace of displayName and name.givenName with the same values',
    provider: 'entra',
    kind: 'user',
    method: 'patch',
    body: () =>
      patch(
        { op: 'Replace', path: 'displayName', value: 'Ryan Leenay' },
        { op: 'Replace', path: 'name.givenName', value: 'Ryan' },
      ),
  },
  {
    name: 'a replace of emails[type eq "work"].value with the same address',
    provider: 'entra',
    kind: 'user',
    method: 'patch',
    body: () => patch({ op: 'Replace', path: 'emails[type eq "work"].value', value: 'ryan@contoso.com' }),
  },
  {
    name: 'a replace of phoneNumbers[type eq "work"].value with the number already stored',
    provider: 'entra',
    kind: 'user',
    method: 'patch',
    body: () =>
      patch({ op: 'Replace', path: 'phoneNumbers[type eq "work"].value', value: '+1 425 555 0100' }),
  },
  {
    name: "Entra's patch of attributes that are not stored only (title, addresses)",
    provider: 'entra',
    kind: 'user',
    method: 'patch',
    body: () =>
      patch(
        { op: 'Replace', path: 'title', value: 'Senior Tour Guide' },
        { op: 'Add', path: 'addresses[type eq "work"].locality', value: 'Redmond' },
      ),
  },
  {
    name: 'Entra\'s replace of active with "True" on an active user',
    provider: 'entra',
    kind: 'user',
    method: 'patch',
    body: () => patch({ op: 'Replace', path: 'active', value: 'True' }),
  },
  {
    name: "Entra's add of the same manager as a bare id",
    provider: 'entra',
    kind: 'user',
    method: 'patch',
    body: (f) => patch({ op: 'Add', path: `${enterpriseSchema}:manager`, value: f.other }),
  },
  {
    name: 'a real change: displayName, with an attribute that is not stored',
    provider: 'entra',
    kind: 'user',
    method: 'patch',
    body: () =>
      patch(
        { op: 'Replace', path: 'displayName', value: 'Ryan J. Leenay' },
        { op: 'Replace', path: 'title', value: 'Senior Tour Guide' },
      ),
    publishes: 'identity.user.updated',
  },
  {
    name: 'a real change: Entra\'s replace of phoneNumbers[type eq "work"].value with a new number',
    provider: 'entra',
    kind: 'user',
    method: 'patch',
    body: () =>
      patch({ op: 'Replace', path: 'phoneNumbers[type eq "work"].value', value: '+1 425 555 0199' }),
    publishes: 'identity.user.updated',
  },
  {
    name: 'a real change: userName in another case (stored as sent)',
    provider: 'okta',
    kind: 'user',
    method: 'replace',
    body: (f) => ({ ...oktaUser(f.userName.toLowerCase()), id: f.user }),
    publishes: 'identity.user.updated',
  },
  {
    name: 'a real change: Entra\'s replace of active with "False"',
    provider: 'entra',
    kind: 'user',
    method: 'patch',
    body: () => patch({ op: 'Replace', path: 'active', value: 'False' }),
    publishes: 'identity.user.deactivated',
  },
  {
    name: "Entra's add of a member already in the group",
    provider: 'entra',
    kind: 'group',
    method: 'patch',
    body: (f) => patch({ op: 'Add', path: 'members', value: [{ value: f.user }] }),
  },
  {
    name: 'a remove of members[value eq id] of a user not in the group',
    provider: 'entra',
    kind: 'group',
    method: 'patch',
    body: (f) => patch({ op: 'Remove', path: `members[value eq "${f.other}"]` }),
  },
  {
    name: "Okta's rename to the same displayName with {id, displayName}",
    provider: 'okta',
    kind: 'group',
    method: 'patch',
    body: (f) => patch({ op: 'replace', value: { id: f.group, displayName: f.groupName } }),
  },
  {
    name: "Okta's PUT of the group as it is, the member's id in upper case",
    provider: 'okta',
    kind: 'group',
    method: 'replace',
    body: (f) => ({
      schemas: [groupSchema],
      id: f.group,
      displayName: f.groupName,
      members: [{ value: f.user.toUpperCase(), display: f.userName }],
    }),
  },
  {
    name: 'a real change: add a new member',
    provider: 'entra',
    kind: 'group',
    method: 'patch',
    body: (f) => patch({ op: 'Add', path: 'members', value: [{ value: f.user }, { value: f.other }] }),
    publishes: 'identity.group.updated',
  },
  {
    name: 'a real change: displayName in another case',
    provider: 'okta',
    kind: 'group',
    method: 'patch',
    body: (f) => patch({ op: 'replace', value: { id: f.group, displayName: f.groupName.toUpperCase() } }),
    publishes: 'identity.group.updated',
  },
];

describe('a PUT or PATCH that changes nothing keeps the version and lastModified and publishes nothing', () => {
  it.each(rows)('$kind: $name', async ({ provider, kind, method, body: bodyOf, publishes }) => {
    const f = await fixture(provider);
    const id = kind === 'user' ? f.user : f.group;
    const before = await read(kind, id);
    const eventsBefore = await eventsAbout(id);
    tick();

    const reply = await write(kind, method, id, bodyOf(f));
    const answered = json(reply.resourceJson);
    const events = (await eventsAbout(id)).slice(eventsBefore.length);

    if (publishes === undefined) {
      expect(reply.etag).toBe(before.etag);
      expect(answered).toEqual(before.resource); // meta.version and meta.lastModified included
      expect(await read(kind, id)).toEqual(before);
      expect(events).toEqual([]);
    } else {
      const version = Number(/^W\/"(\d+)"$/.exec(before.etag)![1]);
      expect(reply.etag).toBe(`W/"${version + 1}"`);
      expect(answered.meta).toMatchObject({
        version: `W/"${version + 1}"`,
        lastModified: new Date(clock).toISOString(),
      });
      expect(events).toEqual([publishes]);
    }
  });
});

describe('an unchanged write is still checked', () => {
  const noOps: Array<{ kind: Kind; body: (f: Fixture) => unknown; change: (f: Fixture) => unknown }> = [
    {
      kind: 'user',
      body: () => patch({ op: 'Replace', path: 'active', value: 'True' }),
      change: () => patch({ op: 'Replace', path: 'displayName', value: 'Someone else' }),
    },
    {
      kind: 'group',
      body: (f) => patch({ op: 'Add', path: 'members', value: [{ value: f.user }] }),
      change: (f) => patch({ op: 'Replace', path: 'displayName', value: `${f.groupName} renamed` }),
    },
  ];

  it.each(noOps)('$kind: a stale If-Match is 412, the current one answers as it is', async (row) => {
    const f = await fixture('entra');
    const id = row.kind === 'user' ? f.user : f.group;
    const stale = (await read(row.kind, id)).etag;
    tick();
    await write(row.kind, 'patch', id, row.change(f), stale);
    const current = await read(row.kind, id);
    expect(current.etag).not.toBe(stale);
    const eventsBefore = await eventsAbout(id);
    tick();

    await expect(write(row.kind, 'patch', id, row.body(f), stale)).rejects.toMatchObject({
      meta: expect.objectContaining({ status: '412' }),
    });
    const reply = await write(row.kind, 'patch', id, row.body(f), current.etag);
    expect(reply.etag).toBe(current.etag);
    expect(await read(row.kind, id)).toEqual(current);
    expect(await eventsAbout(id)).toEqual(eventsBefore);
  });

  const invalid: Array<{
    name: string;
    kind: Kind;
    method: Method;
    body: (f: Fixture) => unknown;
    scimType: string;
  }> = [
    {
      name: 'a PatchOp without its schema',
      kind: 'user',
      method: 'patch',
      body: () => ({ Operations: [{ op: 'replace', path: 'title', value: 'x' }] }),
      scimType: 'invalidSyntax',
    },
    {
      name: 'an unknown op on an attribute that is not stored',
      kind: 'user',
      method: 'patch',
      body: () => patch({ op: 'Frobnicate', path: 'title', value: 'x' }),
      scimType: 'invalidSyntax',
    },
    {
      name: 'an unchanged operation followed by a replace without a value',
      kind: 'user',
      method: 'patch',
      body: () =>
        patch({ op: 'Replace', path: 'active', value: 'True' }, { op: 'Replace', path: 'displayName' }),
      scimType: 'invalidValue',
    },
    {
      name: 'active that is no boolean',
      kind: 'user',
      method: 'patch',
      body: () => patch({ op: 'Replace', path: 'active', value: 'Maybe' }),
      scimType: 'invalidValue',
    },
    {
      name: 'a PUT without userName',
      kind: 'user',
      method: 'replace',
      body: () => ({ schemas: [userSchema], active: true }),
      scimType: 'invalidValue',
    },
    {
      name: "'Operations' that is no array",
      kind: 'group',
      method: 'patch',
      body: (f) => ({
        schemas: [patchSchema],
        Operations: { op: 'add', path: 'members', value: [{ value: f.user }] },
      }),
      scimType: 'invalidSyntax',
    },
    {
      name: 'an add of a member already there and of an id that is no user',
      kind: 'group',
      method: 'patch',
      body: (f) => patch({ op: 'Add', path: 'members', value: [{ value: f.user }, { value: 'not-a-user' }] }),
      scimType: 'invalidValue',
    },
    {
      name: 'a PUT without displayName',
      kind: 'group',
      method: 'replace',
      body: (f) => ({ schemas: [groupSchema], members: [{ value: f.user }] }),
      scimType: 'invalidValue',
    },
  ];

  it.each(invalid)(
    '$kind: $name is 400 $scimType, and nothing changes',
    async ({ kind, method, body: bodyOf, scimType }) => {
      const f = await fixture('entra');
      const id = kind === 'user' ? f.user : f.group;
      const before = await read(kind, id);
      const eventsBefore = await eventsAbout(id);
      tick();

      await expect(write(kind, method, id, bodyOf(f))).rejects.toMatchObject({
        meta: expect.objectContaining({ status: '400', scimType }),
      });
      expect(await read(kind, id)).toEqual(before);
      expect(await eventsAbout(id)).toEqual(eventsBefore);
    },
  );
});

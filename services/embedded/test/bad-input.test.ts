import { brotliCompressSync, deflateSync, gzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '@costgov/config';
import { identity } from '@costgov/contracts';
import { createLogger } from '@costgov/log';
import { createRpcClient } from '@costgov/rpc';
import { freshDb, testBus } from '@costgov/testing';
import { startSystem, systemConfig, type RunningSystem } from '../src/system';

/**
 * Bad input is answered 4xx in the API's own envelope and changes nothing: one text rule for every
 * string (path, query, body keys and values), canonical numbers in the query, bodies that are what
 * their Content-Encoding and charset say. Each case was a 500, an accepted value or a U+FFFD stored.
 */

const logger = createLogger('test', 'silent');
const apiKey = 'cg_live_badinputtestbootstrapkey000000000';
const errorSchema = 'urn:ietf:params:scim:api:messages:2.0:Error';
let system: RunningSystem;
let scimToken = '';
let projectId = '';

interface Reply {
  status: number;
  contentType: string;
  body: any; // eslint-disable-line @typescript-eslint/no-explicit-any
}

interface Send {
  body?: unknown;
  /** Bytes sent as they are, with Content-Type application/json unless headers say otherwise. */
  raw?: string | Buffer;
  headers?: Record<string, string>;
  token?: string;
}

async function call(method: string, path: string, send: Send = {}): Promise<Reply> {
  const scim = path.startsWith('/scim/');
  const body = send.raw ?? (send.body === undefined ? undefined : JSON.stringify(send.body));
  const response = await fetch(`${system.url}${path}`, {
    method,
    headers: {
      authorization: `Bearer ${send.token ?? (scim ? scimToken : apiKey)}`,
      ...(body === undefined ? {} : { 'content-type': scim ? 'application/scim+json' : 'application/json' }),
      ...send.headers,
    },
    body,
  });
  const text = await response.text();
  return {
    status: response.status,
    contentType: response.headers.get('content-type') ?? '',
    body: text ? JSON.parse(text) : undefined,
  };
}

/** The Guard envelope, with `details` naming `field` when one is given. */
function expectGuardError(reply: Reply, status: number, code: string, field?: string) {
  expect(reply.status, JSON.stringify(reply.body)).toBe(status);
  expect(reply.body.error).toMatchObject({ code, message: expect.any(String), details: expect.any(Array) });
  if (field !== undefined)
    expect(reply.body.error.details.map((d: { field: string }) => d.field)).toContain(field);
}

function expectScimError(reply: Reply, status: number, scimType: string) {
  expect(reply.status, JSON.stringify(reply.body)).toBe(status);
  expect(reply.contentType).toMatch(/application\/scim\+json/);
  expect(reply.body).toMatchObject({ schemas: [errorSchema], status: String(status), scimType });
  expect(reply.body.detail).toEqual(expect.any(String));
}

const countProjects = async () =>
  (await call('GET', '/v1/guard/projects?per_page=1')).body.meta.total_count as number;
const countScimUsers = async () => (await call('GET', '/scim/v2/Users?count=0')).body.totalResults as number;

beforeAll(async () => {
  const config = loadConfig(systemConfig, { PORT: '0', HOST: '127.0.0.1', DATA_DIR: 'memory' });
  system = await startSystem(config, logger, {
    env: { GUARD_BOOTSTRAP_API_KEY: apiKey },
    quietBootstrap: true,
    anyPorts: true,
    openDb: (service) => freshDb(service),
    bus: await testBus(logger),
  });
  const identityService = system.services.find((s) => s.name === 'identity')!;
  const client = createRpcClient(identity.IdentityService, `127.0.0.1:${identityService.port}`);
  scimToken = (await client.createScimToken({ name: 'okta' }, { teamId: system.bootstrap!.teamId })).secret;
  client.close();
  projectId = (await call('POST', '/v1/guard/projects', { body: { name: 'existing' } })).body.data.id;
});

afterAll(() => system?.stop());

describe('query parameters of /v1: canonical decimal integers within the documented bounds', () => {
  const numbers = [
    ['2147483648', 'one past the largest page'],
    ['Infinity', 'Infinity'],
    ['1e400', 'an exponent beyond a double'],
    ['1e3', 'an exponent'],
    ['0x10', 'hexadecimal'],
    ['+1', 'a sign'],
    ['007', 'leading zeros'],
    ['1.0', 'a fraction'],
    ['12345678901234567890', '20 digits'],
    ['-1', 'a negative number'],
    [' 1', 'a space'],
  ];
  it.each(numbers.flatMap(([value, what]) => ['page', 'per_page'].map((name) => [name, value, what])))(
    '%s=%s (%s) is 400 naming the parameter',
    async (name, value) => {
      const reply = await call('GET', `/v1/guard/projects?${name}=${encodeURIComponent(value!)}`);
      expectGuardError(reply, 400, 'bad_request', name);
    },
  );

  it.each([
    ['page=1', 200],
    ['page=2147483647', 200],
    ['per_page=100', 200],
  ])('%s is accepted', async (query, status) => {
    expect((await call('GET', `/v1/guard/projects?${query}`)).status).toBe(status);
  });

  it('answers a page past the end with an empty list', async () => {
    const reply = await call('GET', '/v1/guard/projects?page=2147483647&per_page=100');
    expect(reply.body.data).toEqual([]);
    expect(reply.body.meta.current_page).toBe(2147483647);
  });

  it.each([
    ['an empty filter value', 'connection_id=', 'connection_id'],
    ['an empty status', 'status=', 'status'],
    ['an empty page', 'page=', 'page'],
    ['a parameter given twice', 'page=1&page=2', 'page'],
    ['an unknown parameter', 'colour=red', 'colour'],
    ['an unknown parameter named __proto__', '__proto__=x', '__proto__'],
    ['an unknown parameter named constructor', 'constructor=x', 'constructor'],
    ['an unknown parameter named prototype', 'prototype=x', 'prototype'],
    ['a NUL in a filter value', 'connection_id=con_%00', 'connection_id'],
    ['a control character in a filter value', 'connection_id=con_%07', 'connection_id'],
    ['bytes that are not UTF-8', 'connection_id=%FF%FE', 'connection_id'],
    ['a NUL in a parameter name', 'a%00b=1', undefined],
  ])('%s is 400', async (_case, query, field) => {
    expectGuardError(await call('GET', `/v1/guard/projects?${query}`), 400, 'bad_request', field);
  });
});

describe('ids in the path of /v1', () => {
  it.each([
    ['GET', '/v1/guard/projects/%00'],
    ['GET', '/v1/guard/projects/prj_%00x'],
    ['GET', '/v1/guard/projects/%FF'],
    ['GET', '/v1/guard/projects/prj_%1B'],
    ['PATCH', '/v1/guard/projects/%00'],
    ['DELETE', '/v1/guard/projects/%00'],
  ])('%s %s is 400 bad_request naming the path', async (method, path) => {
    const reply = await call(method, path, method === 'PATCH' ? { body: { name: 'x' } } : {});
    expectGuardError(reply, 400, 'bad_request', 'path');
  });
});

describe('JSON bodies of /v1: every key and string under the text rule, 422 naming the field', () => {
  it.each([
    ['a NUL in the name', { name: 'a\u0000b' }, 'name'],
    ['a control character in the name', { name: 'bell\u0007' }, 'name'],
    ['a lone surrogate in the name', { name: 'cut \ud83d' }, 'name'],
    [
      'a NUL in an approver',
      { name: 'ok', approval_rules: { approvers: ['2819c223-7f76-453a-919d-413861904646', 'u\u0000'] } },
      'approval_rules.approvers[1]',
    ],
    ['a NUL in a connection id', { name: 'ok', connection_ids: ['con_\u0000'] }, 'connection_ids[0]'],
    ['a NUL in a key', { 'na\u0000me': 'x' }, 'na\u0000me'],
  ])('%s', async (_case, body, field) => {
    const before = await countProjects();
    expectGuardError(await call('POST', '/v1/guard/projects', { body }), 422, 'validation_error', field);
    expect(await countProjects()).toBe(before);
  });

  it('refuses a NUL in a PATCH and keeps the project as it was', async () => {
    const reply = await call('PATCH', `/v1/guard/projects/${projectId}`, { body: { name: 'x\u0000' } });
    expectGuardError(reply, 422, 'validation_error', 'name');
    expect((await call('GET', `/v1/guard/projects/${projectId}`)).body.data.name).toBe('existing');
  });

  it('counts the length of a name in characters, not UTF-16 units', async () => {
    expect((await call('POST', '/v1/guard/projects', { body: { name: '😀'.repeat(200) } })).status).toBe(201);
    expectGuardError(
      await call('POST', '/v1/guard/projects', { body: { name: '😀'.repeat(201) } }),
      422,
      'validation_error',
      'name',
    );
  });
});

const notUtf8 = Buffer.concat([Buffer.from('{"name": "caf'), Buffer.from([0xe9]), Buffer.from('"}')]);
const plainProject = '{"name": "not compressed"}';

describe('bodies that are not what they claim to be: 400, nothing stored', () => {
  it.each([
    ['bytes that are not UTF-8', { raw: notUtf8 }],
    [
      'bytes that are not UTF-8, charset given',
      { raw: notUtf8, headers: { 'content-type': 'application/json; charset=utf-8' } },
    ],
    ['gzip that is not compressed', { raw: plainProject, headers: { 'content-encoding': 'gzip' } }],
    ['br that is not compressed', { raw: plainProject, headers: { 'content-encoding': 'br' } }],
    ['deflate that is not compressed', { raw: plainProject, headers: { 'content-encoding': 'deflate' } }],
    ['a body nested 10,000 levels deep', { raw: `{"name": ${'['.repeat(10_000)}${']'.repeat(10_000)}}` }],
  ])('%s', async (_case, send) => {
    const before = await countProjects();
    expectGuardError(await call('POST', '/v1/guard/projects', send), 400, 'bad_request');
    expect(await countProjects()).toBe(before);
  });

  it.each([
    ['gzip', gzipSync],
    ['br', brotliCompressSync],
    ['deflate', deflateSync],
  ] as const)('accepts a body really compressed with %s', async (encoding, compress) => {
    const reply = await call('POST', '/v1/guard/projects', {
      raw: compress(Buffer.from(JSON.stringify({ name: `compressed ${encoding}` }))),
      headers: { 'content-encoding': encoding },
    });
    expect(reply.status).toBe(201);
    expect(reply.body.data.name).toBe(`compressed ${encoding}`);
  });
});

describe('SCIM: the same rule, answered with SCIM errors', () => {
  const user = (extra: Record<string, unknown>) => ({
    schemas: ['urn:ietf:params:scim:schemas:core:2.0:User'],
    userName: 'grace@example.com',
    ...extra,
  });

  it.each([
    ['a NUL in externalId', user({ externalId: 'ext\u0000' })],
    ['a NUL in userName', user({ userName: 'a\u0000@example.com' })],
    ['a control character in name.givenName', user({ name: { givenName: 'G\u0001' } })],
    ['a lone surrogate in displayName', user({ displayName: 'x\udc00' })],
    ['a NUL in a key', user({ 'nick\u0000Name': 'g' })],
  ])('POST /Users with %s is 400 invalidValue', async (_case, body) => {
    const before = await countScimUsers();
    expectScimError(await call('POST', '/scim/v2/Users', { body }), 400, 'invalidValue');
    expect(await countScimUsers()).toBe(before);
  });

  it('POST /Groups with a NUL in displayName is 400 invalidValue', async () => {
    const body = { schemas: ['urn:ietf:params:scim:schemas:core:2.0:Group'], displayName: 'ops\u0000' };
    expectScimError(await call('POST', '/scim/v2/Groups', { body }), 400, 'invalidValue');
  });

  it.each([
    ['a NUL in the filter', '/scim/v2/Users?filter=userName%20eq%20%22a%00%22'],
    ['bytes that are not UTF-8 in the filter', '/scim/v2/Users?filter=userName%20eq%20%22%FF%22'],
    ['a NUL in an id', '/scim/v2/Users/%00'],
    ['a NUL in a group id', '/scim/v2/Groups/abc%00'],
  ])('GET with %s is 400 invalidValue', async (_case, path) => {
    expectScimError(await call('GET', path), 400, 'invalidValue');
  });

  it('a list ignores unknown query parameters, those named like a prototype key as any other', async () => {
    const plain = await call('GET', '/scim/v2/Users?count=1');
    expect(plain.status).toBe(200);
    for (const extra of ['colour=red', '__proto__=x', 'constructor=x', 'prototype=x']) {
      const reply = await call('GET', `/scim/v2/Users?count=1&${extra}`);
      expect(reply.status, extra).toBe(200);
      expect(reply.body, extra).toEqual(plain.body);
    }
  });

  it.each([
    ['bytes that are not UTF-8', { raw: notUtf8 }],
    [
      'gzip that is not compressed',
      { raw: '{"userName": "x@example.com"}', headers: { 'content-encoding': 'gzip' } },
    ],
  ])('a body of %s is 400 invalidSyntax', async (_case, send) => {
    expectScimError(await call('POST', '/scim/v2/Users', send), 400, 'invalidSyntax');
  });
});

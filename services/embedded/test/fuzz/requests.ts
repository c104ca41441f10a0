import { gzipSync } from 'node:zlib';
import fc from 'fast-check';
import { hostileText, hostileValue, toJsonText, valueOf } from './arbitraries';
import type { Operation, Schema } from './contract';
import { percentEncode, type WireRequest } from './http';
import { attributeList, scimFilter, scimPatchArbitrary } from './scim';

/** The credentials and real ids a run works with. */
export interface Fixtures {
  credentials: { apiKey: string; readOnlyKey: string; scimToken: string; notEnterpriseScimToken: string };
  /** Ids of real resources per kind, grown as the run creates more (and some later deleted). */
  ids: Record<ResourceKind, string[]>;
}

export type ResourceKind = 'projects' | 'users' | 'groups' | 'webhooks';

export const resourceKindOf = (path: string): ResourceKind | undefined =>
  path.startsWith('/v1/guard/projects')
    ? 'projects'
    : path.startsWith('/scim/v2/Users')
      ? 'users'
      : path.startsWith('/scim/v2/Groups')
        ? 'groups'
        : path.startsWith('/v1/guard/webhooks')
          ? 'webhooks'
          : undefined;

type Credential =
  'right' | 'read-only' | 'other-kind' | 'not-enterprise' | 'unknown' | 'basic' | 'empty' | 'none';
/** A text to percent-encode, or one already encoded (broken escapes, overlong NUL, a lone surrogate). */
type Text = { text: string } | { raw: string };
type PathValue = { real: number } | { kind: ResourceKind; real: number } | Text;
type Body =
  | { kind: 'none' }
  | { kind: 'json'; value: unknown; contentType: string; encoding?: string }
  | { kind: 'gzip'; value: unknown; contentType: string }
  | { kind: 'invalid-utf8'; value: unknown; bytes: number[]; contentType: string }
  | { kind: 'raw'; text: string; contentType?: string };

/** One generated request, before the fixtures turn it into bytes. */
export interface FuzzCase {
  credential: Credential;
  path: Record<string, PathValue>;
  query: Array<[string, Text]>;
  body: Body;
  headers: Record<string, string>;
}

const rawEscapes = [
  '%',
  '%zz',
  '%FF',
  '%00',
  '%C0%80',
  '%ED%A0%80',
  '%F0%9F%98',
  '%2F',
  '..',
  '.',
  'a%2Fb',
  '%20',
];

const text: fc.Arbitrary<Text> = fc.oneof(
  { arbitrary: hostileText.map((value) => ({ text: value })), weight: 4 },
  { arbitrary: fc.constantFrom(...rawEscapes).map((raw) => ({ raw })), weight: 1 },
);

const otherFormatIds = [
  'prj_01j8x3k2m4n5p6q7r8s9t0v1w2',
  'con_01j8x3k2m4n5p6q7r8s9t0v1w2',
  'vio_01j8x3k2m4n5p6q7r8s9t0v1w2',
  '2819c223-7f76-453a-919d-413861904646',
  '00000000-0000-0000-0000-000000000000',
  'u_1',
  'prj_',
  'PRJ_01J8X3K2M4N5P6Q7R8S9T0V1W2',
];

const parameterHints: Record<string, fc.Arbitrary<string>> = {
  filter: scimFilter,
  attributes: attributeList,
  excludedAttributes: attributeList,
};

function textOfValue(value: unknown): string {
  return typeof value === 'string' ? value : toJsonText(value);
}

function queryArbitrary(operation: Operation, document: Schema): fc.Arbitrary<Array<[string, Text]>> {
  const documented = operation.parameters
    .filter((parameter) => parameter.in === 'query')
    .map((parameter) => {
      const valid =
        parameterHints[parameter.name] ??
        valueOf(parameter.schema, { document, hostile: false, known: [] }).map(textOfValue);
      const value: fc.Arbitrary<Text> = fc.oneof(
        { arbitrary: valid.map((value) => ({ text: value })), weight: 4 },
        { arbitrary: text, weight: 1 },
      );
      return fc.option(
        value.map((v): [string, Text] => [parameter.name, v]),
        { freq: 2, nil: undefined },
      );
    });
  // An unknown parameter in one request out of six (fc.option's freq is the odds of the nil side).
  const unknown = fc.oneof(
    { arbitrary: fc.constant(undefined), weight: 5 },
    {
      arbitrary: fc.tuple(fc.constantFrom('colour', 'page', 'per_page', 'filter', 'count', ''), text),
      weight: 1,
    },
  );
  return fc
    .tuple(fc.tuple(...documented), unknown)
    .map(([pairs, extra]) => [...pairs, extra].filter((pair): pair is [string, Text] => pair !== undefined));
}

function pathArbitrary(operation: Operation): fc.Arbitrary<Record<string, PathValue>> {
  const names = operation.parameters
    .filter((parameter) => parameter.in === 'path')
    .map((parameter) => parameter.name);
  const own = resourceKindOf(operation.path);
  const choices: Array<fc.WeightedArbitrary<PathValue>> = [
    {
      arbitrary: fc
        .tuple(fc.constantFrom<ResourceKind>('projects', 'users', 'groups', 'webhooks'), fc.nat())
        .map(([kind, index]) => ({ kind, real: index })),
      weight: 1,
    },
    { arbitrary: fc.constantFrom(...otherFormatIds).map((id) => ({ text: id })), weight: 2 },
    { arbitrary: text, weight: 3 },
  ];
  if (own) choices.push({ arbitrary: fc.nat().map((index) => ({ real: index })), weight: 8 });
  // An empty segment would address the list (`/Users/` is `/Users`), not this operation.
  const value = fc.oneof(...choices).filter((v) => !('text' in v) || v.text !== '');
  return fc.record(Object.fromEntries(names.map((name) => [name, value])));
}

const wrongContentTypes = [
  'text/plain',
  'application/x-www-form-urlencoded',
  'multipart/form-data; boundary=x',
  'application/xml',
  'application/json; charset=utf-16',
  'application/json; charset=latin1',
  'application/merge-patch+json',
  'application/scim+json',
  'application/json',
  'APPLICATION/JSON',
  '',
];

const malformedBodies = [
  '',
  '{',
  '{"name": ',
  "{'name': 'x'}",
  'null',
  '[]',
  '"text"',
  '42',
  '\uFEFF{}',
  '{"name":"a","name":"b"}',
  '{"__proto__":{"polluted":true}}',
  '{"constructor":{"prototype":{"polluted":true}}}',
  '{"name": 1e400}',
  '{"name": NaN}',
  '{"name": "\\ud800"}',
  '{"name": "\\u0000"}',
  `${'['.repeat(200_000)}${']'.repeat(200_000)}`,
  `{"a":${'{"a":'.repeat(50_000)}1${'}'.repeat(50_000)}}`,
  'x'.repeat(1_100_000),
];

const invalidUtf8 = [
  [0xff],
  [0xfe, 0xff],
  [0xc0, 0x80],
  [0xed, 0xa0, 0x80],
  [0xe2, 0x82],
  [0xf8, 0x88, 0x80, 0x80, 0x80],
  [0x80],
];

/**
 * Values the document describes in prose only (PATCH paths, member ids, user names), so generated
 * SCIM writes get past the first check into the PATCH engine and the stores.
 */
function hintsFor(operation: Operation, fixtures: Fixtures): Record<string, fc.Arbitrary<unknown>> {
  const userId = fc.constantFrom(...fixtures.ids.users, '2819c223-7f76-453a-919d-413861904646');
  const enterprise = 'urn:ietf:params:scim:schemas:extension:enterprise:2.0:User';
  const path = fc.oneof(
    fc.constantFrom(
      'active',
      'userName',
      'externalId',
      'displayName',
      'name',
      'name.givenName',
      'name.familyName',
      'name.middleName',
      'name.honorificPrefix',
      'name.formatted',
      'emails',
      'emails[type eq "work"].value',
      'emails[primary eq true].value',
      'emails[type eq "work" and primary eq true].value',
      'phoneNumbers[type eq "work"].value',
      'addresses[type eq "work"].streetAddress',
      'members',
      `${enterprise}:manager`,
      `${enterprise}:department`,
      'urn:ietf:params:scim:schemas:core:2.0:User:name.givenName',
      'meta',
      'id',
      'groups',
      'members[value eq "x"].display',
    ),
    userId.map((id) => `members[value eq "${id}"]`),
    hostileText,
  );
  const value = fc.oneof(
    fc.boolean(),
    fc.constantFrom('True', 'False', 'x', ''),
    userId,
    fc.emailAddress(),
    fc.uniqueArray(userId.map((id) => ({ value: id }))),
    fc.record({ givenName: fc.string(), familyName: hostileText }, { requiredKeys: [] }),
    fc.record({ value: userId, displayName: fc.string() }, { requiredKeys: ['value'] }),
    fc.dictionary(
      fc.constantFrom('name.givenName', 'active', 'userName', `${enterprise}:department`, 'displayName'),
      fc.jsonValue({ maxDepth: 1 }),
    ),
    hostileValue,
  );
  // The document types `schemas` as any strings; the service wants the resource's (or PatchOp's) URN in it.
  const urn =
    operation.method === 'PATCH'
      ? 'urn:ietf:params:scim:api:messages:2.0:PatchOp'
      : `urn:ietf:params:scim:schemas:core:2.0:${resourceKindOf(operation.path) === 'groups' ? 'Group' : 'User'}`;
  return {
    schemas: fc.constantFrom([urn], [urn, enterprise], ['urn:ietf:params:scim:schemas:core:2.0:User']),
    path,
    value,
    userName: fc.oneof(fc.emailAddress(), hostileText),
    op: fc.constantFrom('add', 'remove', 'replace', 'Replace', 'ADD', 'move', ''),
    manager: fc.oneof(
      userId,
      userId.map((id) => ({ value: id })),
    ),
  };
}

/**
 * Approvers must be the team's SCIM users and connections the team's connections (it has none). Webhook
 * targets and event patterns are mostly ones the notifier accepts (a `.invalid` host: nothing is sent),
 * with a few it refuses (private addresses, unknown and internal types).
 */
const guardHints = (fixtures: Fixtures): Record<string, fc.Arbitrary<unknown>> => ({
  approvers: fc.uniqueArray(fc.constantFrom(...fixtures.ids.users), { maxLength: 3 }),
  connection_ids: fc.constant([]),
  url: fc.constantFrom(
    'https://hooks.fuzz.invalid/costgov',
    'http://hooks.fuzz.invalid:8080/a?b=c',
    'http://169.254.169.254/latest/meta-data/',
    'http://[::1]/',
  ),
  events: fc.uniqueArray(
    fc.constantFrom('*', 'violations.*', 'budgets.budget.breached', 'billing.*', 'scanner.scan.requested'),
    { maxLength: 3 },
  ),
});

function bodyArbitrary(operation: Operation, document: Schema, fixtures: Fixtures): fc.Arbitrary<Body> {
  const known = [...fixtures.ids.users, ...fixtures.ids.projects];
  const hints = operation.api === 'scim' ? hintsFor(operation, fixtures) : guardHints(fixtures);
  const raw: fc.Arbitrary<Body> = fc
    .tuple(fc.constantFrom(...malformedBodies), fc.constantFrom(...wrongContentTypes.slice(-3), undefined))
    .map(([body, contentType]) => ({ kind: 'raw', text: body, contentType }));
  if (!operation.body) {
    return fc.oneof(
      { arbitrary: fc.constant<Body>({ kind: 'none' }), weight: 12 },
      { arbitrary: raw, weight: 1 },
      {
        arbitrary: hostileValue.map((value): Body => ({
          kind: 'json',
          value,
          contentType: 'application/json',
        })),
        weight: 1,
      },
    );
  }
  const types = Object.keys(operation.body.content);
  const ofType = (hostile: boolean) =>
    fc.constantFrom(...types).chain((contentType) =>
      valueOf(operation.body!.content[contentType]!, { document, hostile, known, hints }).map((value) => ({
        contentType,
        value,
      })),
    );
  const realistic: fc.Arbitrary<Body> | undefined =
    operation.api === 'scim' && operation.method === 'PATCH'
      ? scimPatchArbitrary(operation, fixtures).map((value) => ({
          kind: 'json',
          value,
          contentType: types[0]!,
        }))
      : undefined;
  return fc.oneof(
    ...(realistic ? [{ arbitrary: realistic, weight: 6 }] : []),
    { arbitrary: ofType(false).map((b): Body => ({ kind: 'json', ...b })), weight: 6 },
    { arbitrary: ofType(true).map((b): Body => ({ kind: 'json', ...b })), weight: 4 },
    {
      arbitrary: fc
        .tuple(ofType(false), fc.constantFrom(...wrongContentTypes))
        .map(([b, contentType]): Body => ({ kind: 'json', value: b.value, contentType })),
      weight: 1,
    },
    {
      arbitrary: fc
        .tuple(ofType(false), fc.constantFrom('gzip', 'br', 'deflate', 'identity', 'x-unknown', 'gzip, gzip'))
        .map(([b, encoding]): Body => ({ kind: 'json', ...b, encoding })),
      weight: 1,
    },
    { arbitrary: ofType(false).map((b): Body => ({ kind: 'gzip', ...b })), weight: 1 },
    {
      arbitrary: fc
        .tuple(ofType(false), fc.constantFrom(...invalidUtf8))
        .map(([b, bytes]): Body => ({ kind: 'invalid-utf8', ...b, bytes })),
      weight: 1,
    },
    { arbitrary: raw, weight: 1 },
    { arbitrary: fc.constant<Body>({ kind: 'none' }), weight: 1 },
  );
}

const credentialArbitrary: fc.Arbitrary<Credential> = fc.oneof(
  { arbitrary: fc.constant<Credential>('right'), weight: 16 },
  {
    arbitrary: fc.constantFrom<Credential>(
      'read-only',
      'other-kind',
      'not-enterprise',
      'unknown',
      'basic',
      'empty',
      'none',
    ),
    weight: 3,
  },
);

function headersArbitrary(operation: Operation): fc.Arbitrary<Record<string, string>> {
  const some = fc
    .record(
      {
        'x-request-id': fc.constantFrom(
          'abcdefgh',
          'req.1:2-3_4',
          'a'.repeat(128),
          'a'.repeat(129),
          'short',
          'with space',
          'ü'.repeat(10),
        ),
        'if-match': fc.constantFrom('*', 'W/"1"', '"nope"', 'garbage', ''),
        'if-none-match': fc.constantFrom('*', 'W/"1"', '"nope"'),
        accept: fc.constantFrom('application/xml', 'text/html', '*/*', 'application/scim+json'),
      },
      { requiredKeys: [] },
    )
    .map((headers) => {
      // Conditional headers only where a client would send them: on a SCIM resource (which has an
      // ETag), If-None-Match on reads and If-Match on writes. (Anywhere else a GET with
      // `If-None-Match: *` answers 304, as RFC 9110 allows, which no /v1 client sends.)
      const resource =
        operation.api === 'scim' && resourceKindOf(operation.path) && operation.path.endsWith('{id}');
      return {
        ...headers,
        'if-none-match': resource && operation.method === 'GET' ? headers['if-none-match'] : undefined,
        'if-match': resource && operation.method !== 'GET' ? headers['if-match'] : undefined,
      };
    })
    .map(
      (headers) =>
        Object.fromEntries(Object.entries(headers).filter(([, v]) => v !== undefined)) as Record<
          string,
          string
        >,
    );
  return fc.oneof({ arbitrary: fc.constant({}), weight: 3 }, { arbitrary: some, weight: 1 });
}

/** Requests to one operation: valid-ish and mutated, with and without the right credential. */
export function caseArbitrary(
  operation: Operation,
  document: Schema,
  fixtures: Fixtures,
): fc.Arbitrary<FuzzCase> {
  return fc.record({
    credential: operation.secured
      ? credentialArbitrary
      : fc.oneof(
          { arbitrary: fc.constant<Credential>('none'), weight: 6 },
          { arbitrary: credentialArbitrary, weight: 1 },
        ),
    path: pathArbitrary(operation),
    query: queryArbitrary(operation, document),
    body: bodyArbitrary(operation, document, fixtures),
    headers: headersArbitrary(operation),
  });
}

const encodeText = (value: Text) => ('raw' in value ? value.raw : percentEncode(value.text));

function authorizationOf(
  operation: Operation,
  credential: Credential,
  fixtures: Fixtures,
): string | undefined {
  const { apiKey, readOnlyKey, scimToken, notEnterpriseScimToken } = fixtures.credentials;
  const scim = operation.api === 'scim';
  switch (credential) {
    case 'right':
      return `Bearer ${scim ? scimToken : apiKey}`;
    case 'read-only':
      return `Bearer ${scim ? apiKey : readOnlyKey}`;
    case 'other-kind':
      return `Bearer ${scim ? readOnlyKey : scimToken}`;
    case 'not-enterprise':
      return `Bearer ${notEnterpriseScimToken}`;
    case 'unknown':
      return `Bearer cg_live_${'0'.repeat(40)}`;
    case 'basic':
      return 'Basic dXNlcjpwYXNz';
    case 'empty':
      return 'Bearer ';
    case 'none':
      return undefined;
  }
}

/** The bytes of a generated request, with the fixtures' real credentials and ids. */
export function wireOf(operation: Operation, fuzz: FuzzCase, fixtures: Fixtures): WireRequest {
  const own = resourceKindOf(operation.path);
  const path = operation.path.replace(/\{([^}]+)\}/g, (_match, name: string) => {
    const value = fuzz.path[name];
    if (!value) return 'missing';
    if ('real' in value) {
      const pool = fixtures.ids['kind' in value ? value.kind : (own ?? 'projects')];
      return pool.length ? percentEncode(pool[value.real % pool.length]!) : 'none';
    }
    return encodeText(value);
  });
  const query = fuzz.query.map(([name, value]) => `${percentEncode(name)}=${encodeText(value)}`).join('&');
  const headers: Record<string, string> = { ...fuzz.headers };
  const authorization = authorizationOf(operation, fuzz.credential, fixtures);
  if (authorization) headers.authorization = authorization;
  let body: Buffer | undefined;
  const b = fuzz.body;
  if (b.kind === 'json') {
    body = Buffer.from(toJsonText(b.value), 'utf8');
    if (b.encoding) headers['content-encoding'] = b.encoding;
  } else if (b.kind === 'gzip') {
    body = gzipSync(toJsonText(b.value));
    headers['content-encoding'] = 'gzip';
  } else if (b.kind === 'invalid-utf8') {
    // The bytes land inside the first string of the document, or in a string of their own.
    const json = toJsonText(b.value);
    const at = json.indexOf('"', json.indexOf(':') + 1);
    const [head, tail] = at > 0 ? [json.slice(0, at + 1), json.slice(at + 1)] : ['{"x":"', '"}'];
    body = Buffer.concat([Buffer.from(head), Buffer.from(b.bytes), Buffer.from(tail)]);
  } else if (b.kind === 'raw') body = Buffer.from(b.text, 'utf8');
  if (b.kind !== 'none' && b.kind !== 'raw') headers['content-type'] = b.contentType;
  if (b.kind === 'raw' && b.contentType !== undefined) headers['content-type'] = b.contentType;
  if (headers['content-type'] === '') delete headers['content-type'];
  return { method: operation.method, path: query ? `${path}?${query}` : path, headers, body };
}

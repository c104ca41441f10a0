import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '@costgov/config';
import { identity } from '@costgov/contracts';
import { createLogger } from '@costgov/log';
import { createRpcClient } from '@costgov/rpc';
import { freshDb, testBus } from '@costgov/testing';
import { startSystem, systemConfig, type RunningSystem } from '../src/system';
import { contractChecker, operationsOf, type Answer, type Operation, type Schema } from './fuzz/contract';
import { curlOf, percentEncode, wireClient, type WireRequest } from './fuzz/http';
import { caseArbitrary, resourceKindOf, wireOf, type Fixtures } from './fuzz/requests';

/*
 * Schema-driven fuzzing of the served OpenAPI document (GET /v1/openapi.json, the contract): for every
 * operation, requests generated from its schemas, valid-ish and mutated, with and without the right
 * credential. Every answer must be below 500, on a connection that stays up, documented for the
 * operation (status, media type, schema), in the API's error body, and carry an X-Request-Id.
 *
 * FUZZ_SEED (default fixed), FUZZ_RUNS (requests in total, spread over the operations) reproduce or
 * widen a run; FUZZ_SURVEY=1 keeps going after a failure and lists every distinct one (for triage).
 */
const seed = Number(process.env.FUZZ_SEED ?? 20261123);
const totalRuns = Number(process.env.FUZZ_RUNS ?? 3000);
const survey = process.env.FUZZ_SURVEY === '1';

const logger = createLogger('test', 'silent');
const apiKey = 'cg_live_fuzztestbootstrapkey00000000000000';
let system: RunningSystem;
let client: ReturnType<typeof wireClient>;
let document: Schema;
let operations: Operation[];
let problemsOf: ReturnType<typeof contractChecker>;
const fixtures: Fixtures = {
  credentials: { apiKey, readOnlyKey: '', scimToken: '', notEnterpriseScimToken: '' },
  ids: { projects: [], users: [], groups: [], webhooks: [] },
};

/**
 * A write that succeeds keeps the texts it was sent: each top-level string of a JSON request body
 * that the answer carries as a string under the same name comes back unchanged, but for surrounding
 * white space (names are trimmed).
 */
function changedTexts(operation: Operation, wire: WireRequest, answer: Answer): string[] {
  if (!['POST', 'PUT', 'PATCH'].includes(operation.method) || answer.status >= 300 || !wire.body) return [];
  if (wire.headers['content-encoding']) return [];
  let sent: unknown;
  let got: unknown;
  try {
    sent = JSON.parse(wire.body.toString('utf8'));
    const parsed = JSON.parse(answer.body.toString('utf8')) as { data?: unknown };
    got = operation.api === 'v1' ? parsed.data : parsed;
  } catch {
    return [];
  }
  if (!sent || typeof sent !== 'object' || !got || typeof got !== 'object') return [];
  const answered = got as Record<string, unknown>;
  return Object.entries(sent as Record<string, unknown>)
    .filter(
      ([key, value]) =>
        typeof value === 'string' &&
        typeof answered[key] === 'string' &&
        (answered[key] as string).trim() !== value.trim(),
    )
    .map(
      ([key, value]) =>
        `'${key}' was sent as ${JSON.stringify(value)} and came back as ${JSON.stringify(answered[key])}`,
    );
}

/** Answers per operation and status, printed after the run to show which paths the requests reached. */
const statusesSeen: Record<string, Record<number, number>> = {};

async function send(wire: WireRequest): Promise<Answer> {
  return client.send(wire);
}

/** Sends the request and returns what breaks the contract ("" if nothing), remembering created ids. */
async function exercise(
  operation: Operation,
  wire: WireRequest,
): Promise<{ answer?: Answer; problems: string[] }> {
  let answer: Answer;
  try {
    answer = await send(wire);
  } catch (error) {
    return { problems: [`the connection was dropped: ${(error as Error).message}`] };
  }
  const problems = [...problemsOf(operation, answer), ...changedTexts(operation, wire, answer)];
  const seen = (statusesSeen[operation.id] ??= {});
  seen[answer.status] = (seen[answer.status] ?? 0) + 1;
  const kind = resourceKindOf(operation.path);
  if (kind && answer.status === 201) {
    try {
      const body = JSON.parse(answer.body.toString('utf8')) as { id?: string; data?: { id?: string } };
      const id = body.data?.id ?? body.id;
      if (id) fixtures.ids[kind].push(id);
    } catch {
      // A 201 that is not JSON is already reported by the contract check.
    }
  }
  if (kind && operation.method === 'DELETE' && answer.status === 204) {
    // Keep addressing live resources (a deleted id still comes up among the other ids' 404s).
    const id = decodeURIComponent(wire.path.split('?')[0]!.split('/').pop()!);
    fixtures.ids[kind] = fixtures.ids[kind].filter((known) => known !== id);
  }
  return { answer, problems };
}

const clip = (text: string, max = 1_200) =>
  text.length > max ? `${text.slice(0, max)}… (${text.length} characters)` : text;

const describeFailure = (wire: WireRequest, answer: Answer | undefined, problems: string[]) =>
  [
    problems.map((p) => `  - ${clip(p, 600)}`).join('\n'),
    `  request: ${clip(curlOf(system.url, wire))}`,
    answer
      ? `  answer: ${answer.status} ${String(answer.headers['content-type'] ?? '')} ${clip(answer.body.toString('utf8'), 500)}`
      : '  answer: none',
  ].join('\n');

// The timeout is for the embedded start: four PGlite databases migrate, slowly on a loaded two-core machine.
beforeAll(async () => {
  const config = loadConfig(systemConfig, {
    PORT: '0',
    HOST: '127.0.0.1',
    DATA_DIR: 'memory',
    REDIS_URL: process.env.REDIS_URL ?? '',
    RATE_LIMIT_REDIS_TIMEOUT_MS: '250',
  });
  system = await startSystem(config, logger, {
    env: { GUARD_BOOTSTRAP_API_KEY: apiKey },
    quietBootstrap: true,
    anyPorts: true,
    openDb: (service) => freshDb(service),
    bus: await testBus(logger),
  });
  const identityPort = system.services.find((s) => s.name === 'identity')!.port;
  const rpc = createRpcClient(identity.IdentityService, `127.0.0.1:${identityPort}`);
  const teamId = system.bootstrap!.teamId;
  // Limits stay on (the limiter is on the path of every request) but are raised past what one run
  // sends, through the same RPC as `costgov teams set-limits`, so no answer is a 429.
  await rpc.setTeamLimits({
    teamId,
    apiRequestsPerMinute: 1_000_000,
    apiConcurrentRequests: 1_000,
    scimRequestsPerMinute: 1_000_000,
    scimConcurrentRequests: 1_000,
  });
  fixtures.credentials.readOnlyKey = (
    await rpc.createApiKey({ name: 'fuzz-read', scopes: ['guard:read'] }, { teamId })
  ).secret;
  fixtures.credentials.scimToken = (await rpc.createScimToken({ name: 'fuzz' }, { teamId })).secret;
  const small = await rpc.createTeam({ name: 'fuzz-small', plan: 'team' });
  fixtures.credentials.notEnterpriseScimToken = (
    await rpc.createScimToken({ name: 'fuzz' }, { teamId: small.id })
  ).secret;
  rpc.close();

  client = wireClient(system.url);
  const served = await send({ method: 'GET', path: '/v1/openapi.json', headers: {} });
  document = JSON.parse(served.body.toString('utf8')) as Schema;
  // Deletions last, so the other operations work on the real resources first.
  operations = operationsOf(document).sort(
    (a, b) => Number(a.method === 'DELETE') - Number(b.method === 'DELETE'),
  );
  problemsOf = contractChecker(document);

  // Real resources, so success paths (reads, updates, deletes, memberships) are reached too.
  const json = (body: unknown) => Buffer.from(JSON.stringify(body));
  for (let i = 0; i < 3; i += 1) {
    const user = await send({
      method: 'POST',
      path: '/scim/v2/Users',
      headers: {
        authorization: `Bearer ${fixtures.credentials.scimToken}`,
        'content-type': 'application/scim+json',
      },
      body: json({
        schemas: ['urn:ietf:params:scim:schemas:core:2.0:User'],
        userName: `fuzz${i}@example.com`,
      }),
    });
    fixtures.ids.users.push((JSON.parse(user.body.toString('utf8')) as { id: string }).id);
  }
  const group = await send({
    method: 'POST',
    path: '/scim/v2/Groups',
    headers: {
      authorization: `Bearer ${fixtures.credentials.scimToken}`,
      'content-type': 'application/scim+json',
    },
    body: json({ displayName: 'fuzz', members: [{ value: fixtures.ids.users[0] }] }),
  });
  fixtures.ids.groups.push((JSON.parse(group.body.toString('utf8')) as { id: string }).id);
  for (let i = 0; i < 3; i += 1) {
    const project = await send({
      method: 'POST',
      path: '/v1/guard/projects',
      headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' },
      body: json({
        name: `fuzz-${i}`,
        approval_rules: { require_approval_above: 10, approvers: [fixtures.ids.users[1]] },
      }),
    });
    fixtures.ids.projects.push(
      (JSON.parse(project.body.toString('utf8')) as { data: { id: string } }).data.id,
    );
  }
  // Webhooks to a host that never resolves (.invalid): their deliveries fail without leaving the machine.
  for (let i = 0; i < 2; i += 1) {
    const webhook = await send({
      method: 'POST',
      path: '/v1/guard/webhooks',
      headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' },
      body: json({ url: `https://hooks-${i}.fuzz.invalid/costgov`, events: ['budgets.budget.breached'] }),
    });
    fixtures.ids.webhooks.push(
      (JSON.parse(webhook.body.toString('utf8')) as { data: { id: string } }).data.id,
    );
  }
}, 180_000);

afterAll(async () => {
  client?.close();
  await system?.stop();
});

/** The documented operation a concrete request is for (first match of method and path template). */
function operationFor(method: string, path: string): Operation {
  const pathOnly = path.split('?')[0]!;
  const found = operations.find(
    (op) =>
      op.method === method &&
      new RegExp(`^${op.path.replace(/\{[^}]+\}/g, '[^/]+').replace(/[.]/g, '\\.')}$`).test(pathOnly),
  );
  if (!found) throw new Error(`no documented operation for ${method} ${pathOnly}`);
  return found;
}

// What the issue's fuzzing found, always sent: each must now keep the contract. `$scim`/`$api` stand for
// the credentials, `$user`/`$project` for real ids.
const scimAuth = { authorization: 'Bearer $scim' };
const apiAuth = { authorization: 'Bearer $api' };
const jsonType = { 'content-type': 'application/json' };
const scimType = { 'content-type': 'application/scim+json' };
const reported: Array<[string, string, string, Record<string, string>, (string | Buffer)?]> = [
  ['an emoji as the whole user filter', 'GET', '/scim/v2/Users?filter=%F0%9F%98%80', scimAuth],
  ['an emoji as the whole group filter', 'GET', '/scim/v2/Groups?filter=%F0%9F%98%80', scimAuth],
  [
    'an emoji after a filter value',
    'GET',
    `/scim/v2/Users?filter=${percentEncode('userName eq "a" 😀')}`,
    scimAuth,
  ],
  ['page=2147483648', 'GET', '/v1/guard/projects?page=2147483648', apiAuth],
  ['page=Infinity', 'GET', '/v1/guard/projects?page=Infinity', apiAuth],
  ['page=1e400', 'GET', '/v1/guard/projects?page=1e400', apiAuth],
  ['a 20-digit page', 'GET', '/v1/guard/projects?page=12345678901234567890', apiAuth],
  ['page=0x10', 'GET', '/v1/guard/projects?page=0x10', apiAuth],
  ['an empty connection_id', 'GET', '/v1/guard/projects?connection_id=', apiAuth],
  ['a NUL in a query value', 'GET', '/v1/guard/projects?connection_id=%00', apiAuth],
  ['a NUL as the project id', 'GET', '/v1/guard/projects/%00', apiAuth],
  ['a lone surrogate as the project id', 'GET', '/v1/guard/projects/%ED%A0%80', apiAuth],
  ['a NUL as the user id', 'GET', '/scim/v2/Users/%00', scimAuth],
  [
    'a NUL in a project name',
    'POST',
    '/v1/guard/projects',
    { ...apiAuth, ...jsonType },
    '{"name":"a\\u0000b"}',
  ],
  [
    'a NUL in an approver',
    'POST',
    '/v1/guard/projects',
    { ...apiAuth, ...jsonType },
    '{"name":"nul-approver","approval_rules":{"require_approval_above":1,"approvers":["\\u0000"]}}',
  ],
  [
    'a lone surrogate in a name',
    'POST',
    '/v1/guard/projects',
    { ...apiAuth, ...jsonType },
    '{"name":"\\ud800"}',
  ],
  [
    'a huge approval amount',
    'POST',
    '/v1/guard/projects',
    { ...apiAuth, ...jsonType },
    '{"name":"big","approval_rules":{"require_approval_above":1e400}}',
  ],
  [
    'approval rules without an amount',
    'POST',
    '/v1/guard/projects',
    { ...apiAuth, ...jsonType },
    '{"name":"no-amount","approval_rules":{"approvers":["$user"]}}',
  ],
  [
    'invalid UTF-8 in a name',
    'POST',
    '/v1/guard/projects',
    { ...apiAuth, ...jsonType },
    Buffer.from([0x7b, 0x22, 0x6e, 0x61, 0x6d, 0x65, 0x22, 0x3a, 0x22, 0xff, 0x22, 0x7d]),
  ],
  [
    'an uncompressed body marked gzip',
    'POST',
    '/v1/guard/projects',
    { ...apiAuth, ...jsonType, 'content-encoding': 'gzip' },
    '{"name":"gz"}',
  ],
  [
    'an uncompressed body marked br',
    'POST',
    '/v1/guard/projects',
    { ...apiAuth, ...jsonType, 'content-encoding': 'br' },
    '{"name":"br"}',
  ],
  [
    'an uncompressed body marked deflate',
    'PATCH',
    '/v1/guard/projects/$project',
    { ...apiAuth, ...jsonType, 'content-encoding': 'deflate' },
    '{}',
  ],
  [
    'an uncompressed SCIM body marked gzip',
    'POST',
    '/scim/v2/Users',
    { ...scimAuth, ...scimType, 'content-encoding': 'gzip' },
    '{"userName":"gz@example.com"}',
  ],
  [
    'a NUL in a SCIM externalId',
    'POST',
    '/scim/v2/Users',
    { ...scimAuth, ...scimType },
    '{"userName":"nul@example.com","externalId":"a\\u0000"}',
  ],
  [
    'a NUL in a group displayName',
    'POST',
    '/scim/v2/Groups',
    { ...scimAuth, ...scimType },
    '{"displayName":"a\\u0000"}',
  ],
  ['attributes=userName on a user', 'GET', '/scim/v2/Users/$user?attributes=userName', scimAuth],
  ['attributes=userName on the user list', 'GET', '/scim/v2/Users?attributes=userName', scimAuth],
  [
    'excludedAttributes=members on a group',
    'GET',
    '/scim/v2/Groups/$group?excludedAttributes=members',
    scimAuth,
  ],
  [
    'a user filter on name.middleName',
    'GET',
    `/scim/v2/Users?filter=${percentEncode('name.middleName eq "x"')}`,
    scimAuth,
  ],
  [
    'a deeply nested SCIM body',
    'POST',
    '/scim/v2/Users',
    { ...scimAuth, ...scimType },
    `{"userName":"deep@example.com","x":${'['.repeat(100_000)}${']'.repeat(100_000)}}`,
  ],
  // U+FEFF at the start of a string field vanished on the way through gRPC (TextDecoder drops a BOM).
  ['a schema id that is only U+FEFF', 'GET', '/scim/v2/Schemas/%EF%BB%BF', scimAuth],
  ['a resource type id that is only U+FEFF', 'GET', '/scim/v2/ResourceTypes/%EF%BB%BF', scimAuth],
  // An error that quotes a long input made the gRPC status too large to send: 500.
  [
    'a PatchOp whose Operations is a 100,000-character string',
    'PATCH',
    '/scim/v2/Users/$user',
    { ...scimAuth, ...scimType },
    `{"schemas":["urn:ietf:params:scim:api:messages:2.0:PatchOp"],"Operations":"${'y'.repeat(100_000)}"}`,
  ],
  [
    'a user with a 100,000-character attribute name',
    'PUT',
    '/scim/v2/Users/$user',
    { ...scimAuth, ...scimType },
    `{"schemas":["urn:ietf:params:scim:schemas:core:2.0:User"],"userName":"long@example.com","${'x'.repeat(100_000)}":1}`,
  ],
  ['deleting a user', 'DELETE', '/scim/v2/Users/$user', scimAuth],
];

function concrete(
  path: string,
  headers: Record<string, string>,
  body?: string | Buffer,
): Omit<WireRequest, 'method'> {
  const fill = (text: string) =>
    text
      .replace('$scim', fixtures.credentials.scimToken)
      .replace('$api', apiKey)
      .replace('$user', fixtures.ids.users[2]!)
      .replace('$group', fixtures.ids.groups[0]!)
      .replace('$project', fixtures.ids.projects[0]!);
  return {
    path: fill(path),
    headers: Object.fromEntries(Object.entries(headers).map(([k, v]) => [k, fill(v)])),
    body: body === undefined ? undefined : typeof body === 'string' ? Buffer.from(fill(body)) : body,
  };
}

describe('schema-driven fuzzing of the served OpenAPI document', () => {
  it('serves a document with operations on /v1 and /scim/v2', () => {
    expect(operations.some((op) => op.api === 'v1' && op.secured)).toBe(true);
    expect(operations.some((op) => op.api === 'scim')).toBe(true);
  });

  it.each(reported)('keeps the contract for %s', async (_name, method, path, headers, body) => {
    const wire = { method, ...concrete(path, headers, body) };
    const { answer, problems } = await exercise(operationFor(method, wire.path), wire);
    expect(problems, describeFailure(wire, answer, problems)).toEqual([]);
  });

  it(
    'keeps the contract for generated requests to every operation',
    async () => {
      const runs = Math.max(1, Math.ceil(totalRuns / operations.length));
      console.info(
        `fuzz: seed ${seed}, ${runs} requests for each of ${operations.length} operations` +
          ` (FUZZ_SEED, FUZZ_RUNS, FUZZ_SURVEY=1 to change)`,
      );
      const failures: string[] = [];
      const distinct = new Map<string, string>();
      for (const operation of operations) {
        let last = '';
        const property = fc.asyncProperty(caseArbitrary(operation, document, fixtures), async (fuzz) => {
          const wire = wireOf(operation, fuzz, fixtures);
          const { answer, problems } = await exercise(operation, wire);
          if (problems.length === 0) return true;
          last = describeFailure(wire, answer, problems);
          if (!survey) return false;
          for (const problem of problems) {
            const key = `${operation.id}: ${problem.replace(/[0-9a-f-]{36}|'[^']*'|"[^"]*"/g, '…').slice(0, 160)}`;
            const previous = distinct.get(key);
            if (!previous || last.length < previous.length) distinct.set(key, last);
          }
          return true;
        });
        const details = await fc.check(property, {
          seed: seed + operations.indexOf(operation),
          numRuns: runs,
          // Shrinking sends requests too: bound it so a failing operation cannot hold the run.
          interruptAfterTimeLimit: 20_000,
        });
        if (details.failed) {
          failures.push(
            `${operation.method} ${operation.path} (${operation.id}), FUZZ_SEED=${seed} (this operation's seed ${details.seed}), shrunk to:\n${last}`,
          );
        }
      }
      console.info(
        `fuzz: answers per operation\n${Object.entries(statusesSeen)
          .map(
            ([id, counts]) =>
              `  ${id}: ${Object.entries(counts)
                .map(([status, n]) => `${status}×${n}`)
                .join(' ')}`,
          )
          .join('\n')}`,
      );
      if (survey) {
        for (const [key, example] of distinct) {
          failures.push(key);
          console.info(`fuzz survey: ${key}\n${example}\n`);
        }
        console.info(`fuzz survey: ${distinct.size} distinct problems`);
      }
      expect(failures, `\n${failures.join('\n\n')}`).toEqual([]);
    },
    15 * 60_000,
  );
});

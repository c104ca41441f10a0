import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '@costgov/config';
import { identity, scim } from '@costgov/contracts';
import { newUuid } from '@costgov/ids';
import { createLogger } from '@costgov/log';
import { createRpcClient, type RpcClient } from '@costgov/rpc';
import { freshDb, testBus } from '@costgov/testing';
import { startSystem, systemConfig, type RunningSystem } from '../src/system';

/**
 * The project contract over REST, where the OpenAPI document and the budgets service must agree:
 * approval rules without an amount, 1..50 approvers, approvers that are active SCIM users of the team
 * (identity is asked over gRPC), and names counted in characters.
 */
const logger = createLogger('test', 'silent');
const bootstrapKey = 'cg_live_approvalrulestestkey00000000000000';
let system: RunningSystem;
let scimClient: RpcClient<typeof scim.ScimService>;
let team: { teamId: string };
let otherTeam: { teamId: string };

interface Reply {
  status: number;
  body: any; // eslint-disable-line @typescript-eslint/no-explicit-any
}

async function call(method: string, path: string, body?: unknown): Promise<Reply> {
  const response = await fetch(`${system.url}${path}`, {
    method,
    headers: { authorization: `Bearer ${bootstrapKey}`, 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await response.text();
  return { status: response.status, body: text ? JSON.parse(text) : undefined };
}

const userBody = (userName: string) =>
  Buffer.from(JSON.stringify({ schemas: ['urn:ietf:params:scim:schemas:core:2.0:User'], userName }));

let userCount = 0;
/** A new active SCIM user of `owner`. */
async function newUser(owner = team): Promise<string> {
  const reply = await scimClient.createUser(
    { bodyJson: userBody(`user${userCount++}@example.com`), baseUrl: 'http://localhost/scim/v2' },
    owner,
  );
  return (JSON.parse(Buffer.from(reply.resourceJson).toString()) as { id: string }).id;
}

const fieldsOf = (reply: Reply) => (reply.body.error.details as Array<{ field: string }>).map((d) => d.field);

beforeAll(async () => {
  const config = loadConfig(systemConfig, { PORT: '0', HOST: '127.0.0.1', DATA_DIR: 'memory' });
  system = await startSystem(config, logger, {
    env: { GUARD_BOOTSTRAP_API_KEY: bootstrapKey },
    quietBootstrap: true,
    anyPorts: true,
    openDb: (service) => freshDb(service),
    bus: await testBus(logger),
  });
  const identityAddress = `127.0.0.1:${system.services.find((s) => s.name === 'identity')!.port}`;
  scimClient = createRpcClient(scim.ScimService, identityAddress);
  team = { teamId: system.bootstrap!.teamId };
  const identityClient = createRpcClient(identity.IdentityService, identityAddress);
  otherTeam = { teamId: (await identityClient.createTeam({ name: 'other', plan: 'enterprise' })).id };
  identityClient.close();
});

afterAll(async () => {
  scimClient?.close();
  await system?.stop();
});

describe('approval rules over REST', () => {
  it('accepts rules without require_approval_above (no amount limit) and returns it as null', async () => {
    const approver = await newUser();
    const created = await call('POST', '/v1/guard/projects', {
      name: 'no-amount',
      approval_rules: { approvers: [approver] },
    });
    expect(created.status).toBe(201);
    expect(created.body.data.approval_rules).toEqual({ require_approval_above: null, approvers: [approver] });
    const read = await call('GET', `/v1/guard/projects/${created.body.data.id}`);
    expect(read.body.data.approval_rules).toEqual({ require_approval_above: null, approvers: [approver] });

    const patched = await call('PATCH', `/v1/guard/projects/${created.body.data.id}`, {
      approval_rules: { require_approval_above: 250, approvers: [approver] },
    });
    expect(patched.body.data.approval_rules).toEqual({ require_approval_above: 250, approvers: [approver] });
    const unlimited = await call('PATCH', `/v1/guard/projects/${created.body.data.id}`, {
      approval_rules: { require_approval_above: null, approvers: [approver] },
    });
    expect(unlimited.status).toBe(200);
    expect(unlimited.body.data.approval_rules.require_approval_above).toBeNull();
  });

  it('accepts 1 and 50 approvers and refuses 0 and 51 with 422 on approval_rules.approvers', async () => {
    const users = await Promise.all(Array.from({ length: 51 }, () => newUser()));
    for (const count of [1, 50]) {
      const reply = await call('POST', '/v1/guard/projects', {
        name: `approvers-${count}`,
        approval_rules: { approvers: users.slice(0, count) },
      });
      expect(reply.status).toBe(201);
      expect(reply.body.data.approval_rules.approvers).toHaveLength(count);
    }
    for (const count of [0, 51]) {
      const reply = await call('POST', '/v1/guard/projects', {
        name: `approvers-${count}`,
        approval_rules: { approvers: users.slice(0, count) },
      });
      expect(reply.status).toBe(422);
      expect(fieldsOf(reply)).toEqual(['approval_rules.approvers']);
    }
  });

  it('refuses approvers that are not active users of the team, naming each, and stores nothing', async () => {
    const [active, deactivated, elsewhere] = [await newUser(), await newUser(), await newUser(otherTeam)];
    await scimClient.patchUser(
      {
        id: deactivated,
        bodyJson: Buffer.from(
          JSON.stringify({
            schemas: ['urn:ietf:params:scim:api:messages:2.0:PatchOp'],
            Operations: [{ op: 'replace', path: 'active', value: false }],
          }),
        ),
        baseUrl: 'http://localhost/scim/v2',
      },
      team,
    );
    const reply = await call('POST', '/v1/guard/projects', {
      name: 'unknown-approvers',
      approval_rules: { require_approval_above: 10, approvers: [active, deactivated, elsewhere, newUuid()] },
    });
    expect(reply.status).toBe(422);
    expect(reply.body.error.code).toBe('validation_error');
    expect(fieldsOf(reply)).toEqual([
      'approval_rules.approvers[1]',
      'approval_rules.approvers[2]',
      'approval_rules.approvers[3]',
    ]);
    const list = await call('GET', '/v1/guard/projects?per_page=100');
    expect(list.body.data.map((p: { name: string }) => p.name)).not.toContain('unknown-approvers');

    const project = await call('POST', '/v1/guard/projects', { name: 'patch-approvers' });
    const patch = await call('PATCH', `/v1/guard/projects/${project.body.data.id}`, {
      approval_rules: { approvers: [deactivated] },
    });
    expect(patch.status).toBe(422);
    expect(fieldsOf(patch)).toEqual(['approval_rules.approvers[0]']);
  });
});

describe('names over REST', () => {
  it('counts characters: 200 emoji are accepted, 201 refused', async () => {
    const ok = await call('POST', '/v1/guard/projects', { name: '\u{1F4B8}'.repeat(200) });
    expect(ok.status).toBe(201);
    expect(ok.body.data.name).toBe('\u{1F4B8}'.repeat(200));
    const tooLong = await call('POST', '/v1/guard/projects', { name: '\u{1F4B8}'.repeat(201) });
    expect(tooLong.status).toBe(422);
    expect(fieldsOf(tooLong)).toEqual(['name']);
  });
});

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ApiKeyView, ScimTokenView, TeamView } from '../src/views';
import { cliAt, jsonOf, stackFrame, type Cli } from './cli';
import { startIdentity, type IdentityProcess } from './identity-process';

let identity: IdentityProcess;
let cli: Cli;
let teamId: string;
let otherTeamId: string;

const apiKeySecret = /^cg_live_[0-9A-Za-z]{40}$/;
const scimTokenSecret = /^cg_scim_[0-9A-Za-z]{40}$/;
const day = 86_400_000;

beforeAll(async () => {
  identity = await startIdentity();
  cli = cliAt(identity.address);
  teamId = jsonOf<TeamView>(await cli('teams', 'create', 'keyholders', '--json')).id;
  otherTeamId = jsonOf<TeamView>(await cli('teams', 'create', 'neighbours', '--json')).id;
}, 90_000);

afterAll(async () => {
  await identity?.stop();
});

type CreatedKey = { key: ApiKeyView; secret: string };
type CreatedToken = { token: ScimTokenView; secret: string };

const createKey = async (name: string, ...options: string[]) =>
  jsonOf<CreatedKey>(await cli('keys', 'create', '--team', teamId, '--name', name, '--json', ...options));
const listKeys = async (team = teamId) =>
  jsonOf<ApiKeyView[]>(await cli('keys', 'list', '--team', team, '--json'));

describe('keys create', () => {
  it('prints the key and its secret on stdout, and on stderr that it will not be shown again', async () => {
    const result = await cli('keys', 'create', '--team', teamId, '--name', 'ci');
    expect(result.code).toBe(0);
    expect(result.stderr).toBe('Store this API key now: it will not be shown again.\n');
    expect(result.stdout).toMatch(/^id: +key_\w+$/m);
    expect(result.stdout).toMatch(/^scopes: +guard:read, guard:write$/m);
    expect(result.stdout).toMatch(/^expires: +never$/m);
    expect(result.stdout.match(/^secret: +(\S+)$/m)?.[1]).toMatch(apiKeySecret);
  });

  it('prints the secret alone with --quiet, so $(costgov keys create … --quiet) captures it', async () => {
    const result = await cli('keys', 'create', '--team', teamId, '--name', 'script', '--quiet');
    expect(result.code).toBe(0);
    expect(result.stdout.trimEnd()).toMatch(apiKeySecret);
    expect(result.stdout).toMatch(/^\S+\n$/);
    expect(result.stderr).toMatch(/will not be shown again/);
  });

  it('prints the key and the secret as JSON with --json, the warning still on stderr', async () => {
    const result = await cli('keys', 'create', '--team', teamId, '--name', 'json', '--json');
    const { key, secret } = jsonOf<CreatedKey>(result);
    expect(secret).toMatch(apiKeySecret);
    expect(key).toMatchObject({ teamId, name: 'json', status: 'active', expiresAt: null, revokedAt: null });
    expect(secret.startsWith(key.prefix)).toBe(true);
    expect(result.stderr).toMatch(/will not be shown again/);
  });

  it('takes scopes from --scopes and an expiry from --expires-in or --expires-at', async () => {
    const before = Date.now();
    const { key } = await createKey('scanner', '--scopes', 'guard:read,scans:write', '--expires-in', '30d');
    expect(key.scopes).toEqual(['guard:read', 'scans:write']);
    const expiresAt = Date.parse(key.expiresAt!);
    expect(expiresAt).toBeGreaterThanOrEqual(before + 30 * day);
    expect(expiresAt).toBeLessThanOrEqual(Date.now() + 30 * day);

    const at = '2031-05-01T12:00:00.000Z';
    expect((await createKey('dated', '--expires-at', at)).key.expiresAt).toBe(at);
  });
});

describe('keys list', () => {
  it("lists the team's keys with their prefix and never a secret", async () => {
    const created = await createKey('listed');
    const keys = await listKeys();
    expect(keys).toContainEqual(created.key);
    expect(keys.every((key) => key.teamId === teamId)).toBe(true);

    const table = await cli('keys', 'list', '--team', teamId);
    expect(table.code).toBe(0);
    expect(table.stdout).toMatch(/^ID +NAME +PREFIX +SCOPES +STATUS +EXPIRES +LAST USED$/m);
    expect(table.stdout).toContain(created.key.prefix);
    for (const output of [table.stdout, JSON.stringify(keys)]) {
      expect(output).not.toContain(created.secret);
      expect(output).not.toMatch(/cg_live_[0-9A-Za-z]{40}/);
    }
  });

  it('says so when a team has no keys', async () => {
    expect(await cli('keys', 'list', '--team', otherTeamId)).toEqual({
      code: 0,
      stdout: `No API keys in team ${otherTeamId}.\n`,
      stderr: '',
    });
  });
});

describe('keys revoke', () => {
  it('revokes the key, which the list then shows as revoked, and leaves the others active', async () => {
    const revoked = await createKey('to-revoke');
    const kept = await createKey('to-keep');
    const result = jsonOf<ApiKeyView>(
      await cli('keys', 'revoke', '--team', teamId, revoked.key.id, '--json'),
    );
    expect(result).toMatchObject({ id: revoked.key.id, status: 'revoked' });
    expect(result.revokedAt).not.toBeNull();

    const keys = await listKeys();
    expect(keys.find((key) => key.id === revoked.key.id)).toMatchObject({ status: 'revoked' });
    expect(keys.find((key) => key.id === kept.key.id)).toMatchObject({ status: 'active', revokedAt: null });
  });

  it("does not revoke another team's key", async () => {
    const { key } = await createKey('not-yours');
    const result = await cli('keys', 'revoke', '--team', otherTeamId, key.id);
    expect(result).toEqual({ code: 1, stdout: '', stderr: `error: API key '${key.id}' was not found.\n` });
    expect((await listKeys()).find((listed) => listed.id === key.id)).toMatchObject({ status: 'active' });
  });
});

describe('scim-tokens', () => {
  it('creates a token, printing its secret once, lists it without the secret, and revokes it', async () => {
    const created = await cli('scim-tokens', 'create', '--team', teamId, '--name', 'okta', '--json');
    const { token, secret } = jsonOf<CreatedToken>(created);
    expect(secret).toMatch(scimTokenSecret);
    expect(token).toMatchObject({ teamId, name: 'okta', status: 'active' });
    expect(created.stderr).toBe('Store this SCIM token now: it will not be shown again.\n');

    const list = await cli('scim-tokens', 'list', '--team', teamId, '--json');
    expect(jsonOf<ScimTokenView[]>(list)).toContainEqual(token);
    expect(list.stdout).not.toContain(secret);

    const revoked = jsonOf<ScimTokenView>(
      await cli('scim-tokens', 'revoke', '--team', teamId, token.id, '--json'),
    );
    expect(revoked).toMatchObject({ id: token.id, status: 'revoked' });
    const after = jsonOf<ScimTokenView[]>(await cli('scim-tokens', 'list', '--team', teamId, '--json'));
    expect(after.find((listed) => listed.id === token.id)?.status).toBe('revoked');
  });

  it('names a token "scim" by default and prints the secret alone with --quiet', async () => {
    const result = await cli('scim-tokens', 'create', '--team', otherTeamId, '--quiet');
    expect(result.code).toBe(0);
    expect(result.stdout.trimEnd()).toMatch(scimTokenSecret);
    const table = await cli('scim-tokens', 'list', '--team', otherTeamId);
    expect(table.stdout).toMatch(/^ID +NAME +PREFIX +STATUS +CREATED +LAST USED\nsct_\w+ +scim +cg_scim_/);
  });
});

describe('refusals of the service', () => {
  const validation = 'The request body failed validation.';
  it.each([
    [['keys', 'create', '--team', '<team>', '--name', ''], validation, ['name: must be 1 to 100 characters']],
    [
      ['keys', 'create', '--team', '<team>', '--name', 'x', '--scopes', 'guard:read,admin'],
      validation,
      ["scopes: unknown scope 'admin'"],
    ],
    [
      ['keys', 'create', '--team', '<team>', '--name', 'x', '--expires-at', '2001-01-01T00:00:00Z'],
      validation,
      ['expires_at: must be in the future'],
    ],
    [
      ['scim-tokens', 'create', '--team', '<team>', '--name', ' '],
      validation,
      ['name: must be 1 to 100 characters'],
    ],
    [['keys', 'revoke', '--team', '<team>', 'key_missing'], "API key 'key_missing' was not found.", []],
    [
      ['scim-tokens', 'revoke', '--team', '<team>', 'sct_missing'],
      "SCIM token 'sct_missing' was not found.",
      [],
    ],
    [['keys', 'create', '--team', 'team_missing', '--name', 'x'], "Team 'team_missing' was not found.", []],
    [['keys', 'list', '--team', 'team_missing'], "Team 'team_missing' was not found.", []],
    [['scim-tokens', 'create', '--team', 'team_missing'], "Team 'team_missing' was not found.", []],
  ])('%j exits 1 with the message and each field', async (argv, message, details) => {
    const result = await cli(...argv.map((arg) => (arg === '<team>' ? teamId : arg)));
    expect(result.code).toBe(1);
    expect(result.stdout).toBe('');
    expect(result.stderr).toBe(`error: ${message}\n${details.map((detail) => `  ${detail}\n`).join('')}`);
    expect(result.stderr).not.toMatch(stackFrame);
  });
});

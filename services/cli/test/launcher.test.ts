import { execFile } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort } from '@costgov/testing';
import type { TeamView } from '../src/views';
import { stackFrame } from './cli';
import { repoRoot, startIdentity, type IdentityProcess } from './identity-process';

let identity: IdentityProcess;

beforeAll(async () => {
  identity = await startIdentity();
}, 90_000);

afterAll(async () => {
  await identity?.stop();
});

interface ProcessResult {
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs a command from the repository root, as an operator would, with IDENTITY_ADDR set. */
function runProcess(command: string, args: string[], address = identity.address): Promise<ProcessResult> {
  return new Promise((resolve) => {
    execFile(
      command,
      args,
      { cwd: repoRoot, env: { ...process.env, IDENTITY_ADDR: address }, timeout: 30_000 },
      (error, stdout, stderr) => {
        const code = error ? (typeof error.code === 'number' ? error.code : -1) : 0;
        resolve({ code, stdout, stderr });
      },
    );
  });
}

const bin = (...args: string[]) => runProcess(process.execPath, ['services/cli/bin/costgov.js', ...args]);

describe('the costgov bin', () => {
  it('runs a command against the identity service and exits 0', async () => {
    const result = await bin('teams', 'list', '--json');
    expect(result.code, result.stderr).toBe(0);
    const teams = JSON.parse(result.stdout) as TeamView[];
    expect(teams).toContainEqual(expect.objectContaining({ id: identity.defaultTeamId, name: 'default' }));
  });

  it('writes a new secret alone to stdout, so a shell can capture it', async () => {
    const result = await bin('keys', 'create', '--team', identity.defaultTeamId, '--name', 'ci', '--quiet');
    expect(result.code, result.stderr).toBe(0);
    expect(result.stdout).toMatch(/^cg_live_[0-9A-Za-z]{40}\n$/);
    expect(result.stderr).toBe('Store this API key now: it will not be shown again.\n');
  });

  it('exits 1 on a refusal, 2 on a usage error and 3 when identity is unreachable, with no stack trace', async () => {
    const refused = await bin('teams', 'show', 'team_missing');
    expect(refused).toEqual({ code: 1, stdout: '', stderr: "error: Team 'team_missing' was not found.\n" });

    const usage = await bin('teams', 'create');
    expect(usage.code).toBe(2);
    expect(usage.stderr).toMatch(/^error: missing required argument 'name'\n\nUsage: costgov teams create/);

    const nowhere = `127.0.0.1:${await freePort()}`;
    const unreachable = await runProcess(
      process.execPath,
      ['services/cli/bin/costgov.js', 'teams', 'list'],
      nowhere,
    );
    expect(unreachable).toEqual({
      code: 3,
      stdout: '',
      stderr: `error: cannot reach the identity service at ${nowhere}; is it running? (npm start, or set IDENTITY_ADDR)\n`,
    });
    for (const result of [refused, usage, unreachable]) expect(result.stderr).not.toMatch(stackFrame);
  });
});

describe('npx costgov and npm run cli', () => {
  it.each([
    ['npx', ['--no-install', 'costgov', 'teams', 'show', '<default>', '--quiet']],
    ['npm', ['run', '--silent', 'cli', '--', 'teams', 'show', '<default>', '--quiet']],
  ])('%s runs the CLI from the repository root', async (command, args) => {
    const result = await runProcess(
      command,
      args.map((arg) => (arg === '<default>' ? identity.defaultTeamId : arg)),
    );
    expect(result.code, result.stderr).toBe(0);
    expect(result.stdout).toBe(`${identity.defaultTeamId}\n`);
  });
});

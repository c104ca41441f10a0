import { beforeAll, describe, expect, it } from 'vitest';
import { freePort } from '@costgov/testing';
import { run } from '../src';
import { cliAt, stackFrame, type Cli } from './cli';

// Nothing listens here: a command that got past its usage check would exit 3, not 2.
let nowhere: string;
let cli: Cli;

beforeAll(async () => {
  nowhere = `127.0.0.1:${await freePort()}`;
  cli = cliAt(nowhere);
});

describe('usage errors', () => {
  it.each([
    [[], /^Usage: costgov \[options\] \[command\]/],
    [['frobnicate'], /^error: unknown command 'frobnicate'/],
    [['teams'], /^Usage: costgov teams \[options\] \[command\]/],
    [['teams', 'delete', 'team_x'], /^error: unknown command 'delete'/],
    [['teams', 'create'], /^error: missing required argument 'name'/],
    [['teams', 'create', 'acme', '--colour', 'red'], /^error: unknown option '--colour'/],
    [['teams', 'create', 'a', 'b'], /^error: too many arguments for 'create'/],
    [['teams', 'show'], /^error: missing required argument 'team-id'/],
    [['teams', 'limits', 'team_x'], /^error: give at least one of --api-rpm/],
    [['teams', 'limits', 'team_x', '--api-rpm', 'lots'], /'--api-rpm <n>' argument 'lots' is invalid/],
    [['teams', 'limits', 'team_x', '--api-rpm', '-1'], /'--api-rpm <n>' argument '-1' is invalid/],
    [['teams', 'limits', 'team_x', '--scim-rpm', '1.5'], /'--scim-rpm <n>' argument '1.5' is invalid/],
    [['teams', 'limits', 'team_x', '--api-concurrency', '3000000000'], /argument '3000000000' is invalid/],
    [['keys', 'create', '--name', 'ci'], /^error: required option '--team <team-id>' not specified/],
    [['keys', 'create', '--team', 'team_x'], /^error: required option '--name <name>' not specified/],
    [['keys', 'create', '--team', 't', '--name', 'ci', '--expires-in', '3w'], /argument '3w' is invalid/],
    [['keys', 'create', '--team', 't', '--name', 'ci', '--expires-in', '0d'], /argument '0d' is invalid/],
    [
      ['keys', 'create', '--team', 't', '--name', 'ci', '--expires-at', 'tomorrow'],
      /argument 'tomorrow' is invalid/,
    ],
    [
      ['keys', 'create', '--team', 't', '--name', 'ci', '--expires-in', '1d', '--expires-at', '2031-01-01'],
      /^error: option '--expires-in <duration>' cannot be used with option '--expires-at <iso>'/,
    ],
    [['keys', 'list'], /^error: required option '--team <team-id>' not specified/],
    [['keys', 'revoke', '--team', 'team_x'], /^error: missing required argument 'key-id'/],
    [['keys', 'list', '--team', 't', '--json', '--quiet'], /^error: option '--json' cannot be used with/],
    [['scim-tokens', 'create'], /^error: required option '--team <team-id>' not specified/],
    [['scim-tokens', 'revoke', '--team', 'team_x'], /^error: missing required argument 'token-id'/],
    [['credits', 'grant', '--team', 'team_x'], /^error: missing required argument 'credits'/],
    [['credits', 'grant', '--team', 'team_x', 'ten'], /value 'ten' is invalid for argument 'credits'/],
    [['credits', 'grant', '10'], /^error: required option '--team <team-id>' not specified/],
  ])('%j exits 2 with the error and the usage text', async (argv, message) => {
    const result = await cli(...argv);
    expect(result.code).toBe(2);
    expect(result.stdout).toBe('');
    expect(result.stderr).toMatch(message);
    expect(result.stderr).toMatch(/^Usage: costgov/m);
    expect(result.stderr).not.toMatch(stackFrame);
  });
});

describe('help and version', () => {
  it.each([
    [
      ['--help'],
      /^Usage: costgov \[options\] \[command\][\s\S]*teams[\s\S]*keys[\s\S]*scim-tokens[\s\S]*credits/,
    ],
    [['help', 'keys'], /^Usage: costgov keys \[options\] \[command\][\s\S]*create[\s\S]*list[\s\S]*revoke/],
    [
      ['keys', 'create', '--help'],
      /^Usage: costgov keys create[\s\S]*--expires-in <duration>[\s\S]*--identity/,
    ],
    [['--version'], /^\d+\.\d+\.\d+\n$/],
  ])('%j prints to stdout and exits 0', async (argv, output) => {
    const result = await cli(...argv);
    expect(result).toMatchObject({ code: 0, stderr: '' });
    expect(result.stdout).toMatch(output);
  });
});

describe('an unreachable identity service', () => {
  const unreachable = (address: string) =>
    `error: cannot reach the identity service at ${address}; is it running? (npm start, or set IDENTITY_ADDR)\n`;

  it.each([
    [['teams', 'list']],
    [['teams', 'limits', 'team_x', '--api-rpm', '10']],
    [['keys', 'create', '--team', 'team_x', '--name', 'ci', '--quiet']],
    [['credits', 'grant', '--team', 'team_x', '5', '--json']],
  ])('%j exits 3 at once, naming the address', async (argv) => {
    const started = Date.now();
    const result = await cli(...argv);
    expect(result).toEqual({ code: 3, stdout: '', stderr: unreachable(nowhere) });
    expect(Date.now() - started).toBeLessThan(2_000);
  });

  it('takes the address from --identity over IDENTITY_ADDR', async () => {
    const other = `127.0.0.1:${await freePort()}`;
    const result = await cli('--identity', other, 'teams', 'list');
    expect(result).toEqual({ code: 3, stdout: '', stderr: unreachable(other) });
    expect((await cli('teams', 'list', '--identity', other)).stderr).toBe(unreachable(other));
  });

  it('defaults to 127.0.0.1:50051, where npm start binds identity', async () => {
    let help = '';
    await run(['teams', 'show', 'team_x', '--help'], {
      stdout: { write: (text: string) => (help += text) },
      stderr: { write: () => undefined },
      env: {},
    });
    expect(help).toMatch(/--identity <host:port>[\s\S]*\(default: "127\.0\.0\.1:50051"\)/);
  });
});

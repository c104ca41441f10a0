import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TeamView } from '../src/views';
import { cliAt, jsonOf, stackFrame, type Cli } from './cli';
import { startIdentity, type IdentityProcess } from './identity-process';

let identity: IdentityProcess;
let cli: Cli;

beforeAll(async () => {
  identity = await startIdentity();
  cli = cliAt(identity.address);
}, 90_000);

afterAll(async () => {
  await identity?.stop();
});

const createTeam = async (name: string, ...options: string[]) =>
  jsonOf<TeamView>(await cli('teams', 'create', name, '--json', ...options));

describe('teams create', () => {
  it('creates a team on the team plan and prints it as key: value lines', async () => {
    const result = await cli('teams', 'create', 'acme');
    expect(result.code).toBe(0);
    expect(result.stderr).toBe('');
    expect(result.stdout).toMatch(/^id: +team_\w+$/m);
    expect(result.stdout).toMatch(/^name: +acme$/m);
    expect(result.stdout).toMatch(/^plan: +team$/m);
    expect(result.stdout).toMatch(/^scan credits: +0$/m);
    expect(result.stdout).toMatch(/^api limits: +120 requests\/min, 10 in flight$/m);
  });

  it('takes the plan from --plan and prints JSON with --json', async () => {
    const before = Date.now();
    const team = await createTeam('globex', '--plan', 'enterprise');
    expect(team).toMatchObject({
      name: 'globex',
      plan: 'enterprise',
      scanCredits: 0,
      apiLimits: { requestsPerMinute: 120, concurrentRequests: 10 },
      scimLimits: { requestsPerMinute: 600, concurrentRequests: 20 },
    });
    expect(team.id).toMatch(/^team_\w+$/);
    expect(Date.parse(team.createdAt!)).toBeGreaterThanOrEqual(before - 1000);
  });

  it('prints only the id with --quiet', async () => {
    const result = await cli('teams', 'create', 'initech', '--quiet');
    expect(result.code).toBe(0);
    expect(result.stdout).toMatch(/^team_\w+\n$/);
    expect(jsonOf<TeamView>(await cli('teams', 'show', result.stdout.trim(), '--json')).name).toBe('initech');
  });
});

describe('teams list', () => {
  it('lists every team as a table and as JSON', async () => {
    const created = await createTeam('hooli');
    const teams = jsonOf<TeamView[]>(await cli('teams', 'list', '--json'));
    expect(teams).toContainEqual(created);
    expect(teams).toContainEqual(expect.objectContaining({ id: identity.defaultTeamId, name: 'default' }));

    const table = await cli('teams', 'list');
    expect(table.code).toBe(0);
    const lines = table.stdout.trimEnd().split('\n');
    expect(lines[0]).toMatch(/^ID +NAME +PLAN +CREDITS +CREATED$/);
    expect(lines).toHaveLength(teams.length + 1);
    expect(lines.find((line) => line.startsWith(created.id))).toMatch(/ hooli +team +0 +\d{4}-/);
  });
});

describe('teams show', () => {
  it('shows one team', async () => {
    const created = await createTeam('umbrella', '--plan', 'free');
    expect(jsonOf<TeamView>(await cli('teams', 'show', created.id, '--json'))).toEqual(created);
  });
});

describe('teams limits', () => {
  it('sets the limits given, keeps the others, and restores a default with 0', async () => {
    const { id } = await createTeam('limited');

    let team = jsonOf<TeamView>(
      await cli('teams', 'limits', id, '--api-rpm', '300', '--scim-concurrency', '5', '--json'),
    );
    expect(team.apiLimits).toEqual({ requestsPerMinute: 300, concurrentRequests: 10 });
    expect(team.scimLimits).toEqual({ requestsPerMinute: 600, concurrentRequests: 5 });

    team = jsonOf<TeamView>(await cli('teams', 'limits', id, '--api-concurrency', '20', '--json'));
    expect(team.apiLimits).toEqual({ requestsPerMinute: 300, concurrentRequests: 20 });
    expect(team.scimLimits).toEqual({ requestsPerMinute: 600, concurrentRequests: 5 });

    await cli('teams', 'limits', id, '--api-rpm', '0', '--scim-concurrency', '0');
    team = jsonOf<TeamView>(await cli('teams', 'show', id, '--json'));
    expect(team.apiLimits).toEqual({ requestsPerMinute: 120, concurrentRequests: 20 });
    expect(team.scimLimits).toEqual({ requestsPerMinute: 600, concurrentRequests: 20 });
  });
});

describe('credits grant', () => {
  it("adds to the team's balance and prints the team; --quiet prints the new balance", async () => {
    const { id } = await createTeam('scanners');
    const team = jsonOf<TeamView>(await cli('credits', 'grant', '--team', id, '250', '--json'));
    expect(team).toMatchObject({ id, scanCredits: 250 });

    const quiet = await cli('credits', 'grant', '--team', id, '50', '--quiet');
    expect(quiet).toEqual({ code: 0, stdout: '300\n', stderr: '' });
  });
});

describe('refusals of the service', () => {
  let teamId: string;
  beforeAll(async () => {
    teamId = (await createTeam('taken')).id;
  });

  const validation = 'The request body failed validation.';
  it.each([
    [['teams', 'create', ''], validation, ['name: must be 1 to 100 characters']],
    [['teams', 'create', 'x', '--plan', 'gold'], validation, ['plan: must be one of free, team, enterprise']],
    [['teams', 'create', 'taken'], "A team named 'taken' already exists.", ['name: is taken']],
    [
      ['teams', 'limits', '<team>', '--api-rpm', '100000001', '--scim-concurrency', '10001'],
      validation,
      [
        'api_requests_per_minute: must be a whole number from 0 to 100000000',
        'scim_concurrent_requests: must be a whole number from 0 to 10000',
      ],
    ],
    [
      ['credits', 'grant', '--team', '<team>', '0'],
      validation,
      ['credits: must be a whole number from 1 to 1000000'],
    ],
    [['teams', 'show', 'team_missing'], "Team 'team_missing' was not found.", []],
    [['teams', 'limits', 'team_missing', '--api-rpm', '5'], "Team 'team_missing' was not found.", []],
    [['credits', 'grant', '--team', 'team_missing', '5'], "Team 'team_missing' was not found.", []],
  ])('%j exits 1 with the message and each field', async (argv, message, details) => {
    const result = await cli(...argv.map((arg) => (arg === '<team>' ? teamId : arg)));
    expect(result.code).toBe(1);
    expect(result.stdout).toBe('');
    expect(result.stderr).toBe(`error: ${message}\n${details.map((detail) => `  ${detail}\n`).join('')}`);
    expect(result.stderr).not.toMatch(stackFrame);
  });

  it('changes nothing when refused', async () => {
    const team = jsonOf<TeamView>(await cli('teams', 'show', teamId, '--json'));
    expect(team.scanCredits).toBe(0);
    expect(team.apiLimits.requestsPerMinute).toBe(120);
  });
});

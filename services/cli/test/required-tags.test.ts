import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TeamView } from '../src/views';
import { cliAt, jsonOf, stackFrame, type Cli } from './cli';
import { startIdentity, type IdentityProcess } from './identity-process';

let identity: IdentityProcess;
let cli: Cli;
let teamId: string;

beforeAll(async () => {
  identity = await startIdentity();
  cli = cliAt(identity.address);
  teamId = jsonOf<TeamView>(await cli('teams', 'create', 'tagged', '--json')).id;
}, 90_000);

afterAll(async () => {
  await identity?.stop();
});

interface Settings {
  teamId: string;
  requiredTags: string[];
}

describe('teams required-tags', () => {
  it('shows none at first, sets the keys given (once each), replaces them, and clears them', async () => {
    const none = await cli('teams', 'required-tags', teamId);
    expect(none.code).toBe(0);
    expect(none.stdout).toMatch(/^required tags: +-$/m);

    const set = jsonOf<Settings>(
      await cli('teams', 'required-tags', teamId, 'env', 'owner', 'env', '--json'),
    );
    expect(set).toEqual({ teamId, requiredTags: ['env', 'owner'] });
    const shown = await cli('teams', 'required-tags', teamId);
    expect(shown.stdout).toMatch(/^team: +team_\w+$/m);
    expect(shown.stdout).toMatch(/^required tags: +env, owner$/m);

    const replaced = await cli('teams', 'required-tags', teamId, 'cost-center', '--quiet');
    expect(replaced).toEqual({ code: 0, stdout: 'cost-center\n', stderr: '' });

    const cleared = jsonOf<Settings>(await cli('teams', 'required-tags', teamId, '--clear', '--json'));
    expect(cleared.requiredTags).toEqual([]);
    // Another team's keys are its own.
    const other = jsonOf<TeamView>(await cli('teams', 'create', 'untagged', '--json')).id;
    await cli('teams', 'required-tags', teamId, 'env');
    expect(jsonOf<Settings>(await cli('teams', 'required-tags', other, '--json')).requiredTags).toEqual([]);
  });

  it('refuses an unknown team, a bad key, and keys with --clear, changing nothing', async () => {
    await cli('teams', 'required-tags', teamId, 'env');
    const unknown = await cli('teams', 'required-tags', 'team_missing', 'env');
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toBe("error: Team 'team_missing' was not found.\n");

    const bad = await cli('teams', 'required-tags', teamId, 'env', ' spaced ');
    expect(bad.code).toBe(1);
    expect(bad.stderr).toContain('required_tags[1]: must be 1 to 128 characters without surrounding spaces');
    expect(bad.stderr).not.toMatch(stackFrame);

    const both = await cli('teams', 'required-tags', teamId, 'env', '--clear');
    expect(both.code).toBe(2);
    expect(both.stderr).toContain('give tag keys or --clear, not both');

    expect(jsonOf<Settings>(await cli('teams', 'required-tags', teamId, '--json')).requiredTags).toEqual([
      'env',
    ]);
  });
});

describe('teams anomaly-impact', () => {
  interface Impact {
    teamId: string;
    anomalyMinDailyImpact: number | null;
  }

  it('shows the scanner default at first, sets an amount, and clears it', async () => {
    const none = await cli('teams', 'anomaly-impact', teamId);
    expect(none.code).toBe(0);
    expect(none.stdout).toMatch(/^anomaly min daily impact: +scanner default$/m);
    const set = jsonOf<Impact>(await cli('teams', 'anomaly-impact', teamId, '12.5', '--json'));
    expect(set).toEqual({ teamId, anomalyMinDailyImpact: 12.5 });
    expect((await cli('teams', 'anomaly-impact', teamId)).stdout).toMatch(
      /^anomaly min daily impact: +12.5$/m,
    );
    const cleared = jsonOf<Impact>(await cli('teams', 'anomaly-impact', teamId, '--clear', '--json'));
    expect(cleared.anomalyMinDailyImpact).toBeNull();
  });

  it('refuses a negative or malformed amount, and an amount with --clear', async () => {
    for (const bad of ['-5', 'ten', '1e3']) {
      const reply = await cli('teams', 'anomaly-impact', teamId, bad);
      expect(reply.code, bad).toBe(2);
      expect(reply.stderr).toContain('Expected an amount from 0');
    }
    const both = await cli('teams', 'anomaly-impact', teamId, '5', '--clear');
    expect(both.code).toBe(2);
    expect(both.stderr).toContain('give an amount or --clear, not both');
  });
});

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { costsModule } from '@costgov/costs';
import { createLogger } from '@costgov/log';
import { startService, type RunningService } from '@costgov/runtime';
import { freshDb, testBus } from '@costgov/testing';
import { run } from '../src';
import type { TeamView } from '../src/views';
import { jsonOf, stackFrame, type CliResult } from './cli';
import { startIdentity, type IdentityProcess } from './identity-process';

const logger = createLogger('test', 'silent');
let identity: IdentityProcess;
let costs: RunningService;
let bus: Awaited<ReturnType<typeof testBus>>;
let teamId: string;

/** The CLI against identity (teams) and costs (the retention), its output captured. */
async function cli(...argv: string[]): Promise<CliResult> {
  const result = { stdout: '', stderr: '' };
  const code = await run(argv, {
    stdout: { write: (text: string) => (result.stdout += text) },
    stderr: { write: (text: string) => (result.stderr += text) },
    env: { IDENTITY_ADDR: identity.address, COSTS_ADDR: `127.0.0.1:${costs.port}` },
  });
  return { code, ...result };
}

beforeAll(async () => {
  bus = await testBus(logger);
  const db = await freshDb('costs');
  [identity, costs] = await Promise.all([
    startIdentity(),
    startService(costsModule(), {
      logger,
      bus,
      openDb: async () => db,
      dataDir: 'memory',
      grpcAddress: '127.0.0.1:0',
    }),
  ]);
  teamId = jsonOf<TeamView>(await cli('teams', 'create', 'retained', '--json')).id;
}, 90_000);

afterAll(async () => {
  await identity?.stop();
  await costs?.stop();
  await bus?.close();
});

interface Retention {
  teamId: string;
  rawRetentionMonths: number | null;
}

describe('teams raw-retention', () => {
  it('shows forever at first, sets months, and clears them', async () => {
    const none = await cli('teams', 'raw-retention', teamId);
    expect(none.code).toBe(0);
    expect(none.stdout).toMatch(/^raw retention: +forever$/m);
    expect(jsonOf<Retention>(await cli('teams', 'raw-retention', teamId, '13', '--json'))).toEqual({
      teamId,
      rawRetentionMonths: 13,
    });
    expect((await cli('teams', 'raw-retention', teamId)).stdout).toMatch(/^raw retention: +13 months$/m);
    expect(await cli('teams', 'raw-retention', teamId, '--clear', '--quiet')).toEqual({
      code: 0,
      stdout: '\n',
      stderr: '',
    });
    expect(
      jsonOf<Retention>(await cli('teams', 'raw-retention', teamId, '--json')).rawRetentionMonths,
    ).toBeNull();
  });

  it('refuses a number that is not whole months from 1 to 1200, or months with --clear', async () => {
    for (const bad of ['0', '1201', '1.5', 'twelve']) {
      const result = await cli('teams', 'raw-retention', teamId, bad);
      expect(result.code).toBe(2);
      expect(result.stderr).toContain('Expected a whole number of months from 1 to 1200.');
    }
    const both = await cli('teams', 'raw-retention', teamId, '6', '--clear');
    expect(both.code).toBe(2);
    expect(both.stderr).toContain('give a number of months or --clear, not both');
    expect(both.stderr).not.toMatch(stackFrame);
  });

  it('says which team does not exist', async () => {
    const result = await cli('teams', 'raw-retention', 'team_00000000000000000000000000', '6');
    expect(result.code).toBe(1);
    expect(result.stderr).not.toMatch(stackFrame);
  });
});

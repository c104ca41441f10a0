import { describe, expect, it } from 'vitest';
import { create } from '@bufbuild/protobuf';
import { timestampFromDate } from '@bufbuild/protobuf/wkt';
import { costs, identity } from '@costgov/contracts';
import { runRulesOverRpc } from '../../src/scans/rules-over-rpc';
import { dailySeries } from './fixtures';

// One month of 20 a day of usage, and 55 (35 more) on its last day: above the baseline by 175%, by
// more than three deviations, and by 35 in money.
const daily = dailySeries('2024-09-01', [...Array.from({ length: 29 }, () => 20), 55]);
const response = create(costs.GetScanDataResponseSchema, {
  windowStart: timestampFromDate(new Date('2024-08-01T00:00:00Z')),
  windowEnd: timestampFromDate(new Date('2024-10-01T00:00:00Z')),
  dataStart: timestampFromDate(new Date('2024-09-01T00:00:00Z')),
  dataEnd: timestampFromDate(new Date('2024-10-01T00:00:00Z')),
  currency: 'USD',
  daily,
});

const run = async (teamMinimum: number | undefined, scannerMinimum?: number) => {
  const rules = runRulesOverRpc({
    scanData: { getScanData: async () => response },
    identityClient: {
      getTeamSettings: async () =>
        create(identity.TeamSettingsSchema, {
          teamId: 'team_a',
          requiredTags: [],
          ...(teamMinimum === undefined ? {} : { anomalyMinDailyImpact: teamMinimum }),
        }),
    },
    now: () => new Date('2024-10-01T00:00:00Z'),
    minDailyImpact: scannerMinimum,
  });
  const { results } = await rules(
    { teamId: 'team_a', projectId: 'prj_a', scanId: 'scn_a', connectionIds: ['con_a'] },
    () => undefined,
  );
  return results.filter((r) => r.ruleId.endsWith('anomaly')).map((r) => r.ruleId);
};

describe('the minimum daily impact of an anomaly', () => {
  it('is the default 50 when neither the team nor the scanner sets one: a rise of 35 is not flagged', async () => {
    expect(await run(undefined)).toEqual([]);
  });

  it("is the team's own when it set one", async () => {
    expect(await run(30)).toEqual(['spend-daily-anomaly', 'spend-service-anomaly']);
    expect(await run(40, 10)).toEqual([]);
  });

  it("is the scanner's setting when the team set none", async () => {
    expect(await run(undefined, 30)).toEqual(['spend-daily-anomaly', 'spend-service-anomaly']);
  });
});

import { describe, expect, it } from 'vitest';
import { create } from '@bufbuild/protobuf';
import { timestampFromDate } from '@bufbuild/protobuf/wkt';
import { costs, identity } from '@costgov/contracts';
import { runRulesOverRpc } from '../src/scans/rules-over-rpc';

describe('rules over RPC', () => {
  it('report the ids of the resources costs answered with, for recording how findings were resolved', async () => {
    const planted = ['i-1', 'vol-2', 'eip-3'];
    const response = create(costs.GetScanDataResponseSchema, {
      windowStart: timestampFromDate(new Date('2024-09-01T00:00:00Z')),
      windowEnd: timestampFromDate(new Date('2024-10-01T00:00:00Z')),
      currency: 'USD',
      resources: planted.map((resourceId) => ({ connectionId: 'con_a', resourceId })),
    });
    const rules = runRulesOverRpc({
      scanData: { getScanData: async () => response },
      identityClient: {
        getTeamSettings: async () =>
          create(identity.TeamSettingsSchema, { teamId: 'team_a', requiredTags: [] }),
      },
      now: () => new Date('2024-10-01T00:00:00Z'),
    });
    const outcome = await rules(
      { teamId: 'team_a', projectId: 'prj_a', scanId: 'scn_a', connectionIds: ['con_a'] },
      () => undefined,
    );
    expect([...(outcome.resourceIds ?? [])].sort()).toEqual([...planted].sort());
  });
});

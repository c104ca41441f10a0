import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { costs } from '@costgov/contracts';
import { newId } from '@costgov/ids';
import type { RpcClient } from '@costgov/rpc';
import { focusFile, uploadParts } from '@costgov/testing';
import { startCosts, type CostsUnderTest } from './fixture';

const team = { teamId: newId('team') };

let costsService: CostsUnderTest;
let connections: RpcClient<typeof costs.ConnectionsService>;
let costData: RpcClient<typeof costs.CostDataService>;
let scanData: RpcClient<typeof costs.ScanDataService>;

beforeAll(async () => {
  costsService = await startCosts();
  ({ connections, costData } = costsService.clients);
  scanData = costsService.client(costs.ScanDataService, { deadlineMs: 60_000 });
}, 60_000);

afterAll(() => costsService?.stop());

/** One row per resource in March 2025, each with `tagBytes` of tags; resource i costs i + 1. */
const wideFile = (resources: number, tagBytes: number): string =>
  focusFile(
    Array.from({ length: resources }, (_, i) => ({
      cost: i + 1,
      tags: { owner: `team-${i}`, note: 'x'.repeat(tagBytes) },
    })),
    { month: '2025-03', chargeDay: () => new Date('2025-03-10T00:00:00Z') },
  );

describe('ScanDataService.GetScanData', () => {
  it('keeps its answer under the gRPC message limit, the costliest resources first, and says it left some out', async () => {
    const connectionId = (await connections.createConnection({ name: 'wide', provider: 'aws' }, team)).id;
    // 6000 resources with 1 KB of tags each: about 6 MB of resources, more than one message carries.
    await costData.uploadCostData(uploadParts(connectionId, wideFile(6000, 1000)), team);
    const data = await scanData.getScanData({ connectionIds: [connectionId], maxResources: 10_000 }, team);
    expect(data.truncated).toBe(true);
    expect(data.resources.length).toBeGreaterThan(1000);
    expect(data.resources.length).toBeLessThan(6000);
    expect(data.resources[0]).toMatchObject({
      resourceId: 'i-5999',
      effectiveCost: 6000,
      hoursSeen: 1,
      daysSeen: 1,
    });
    expect(data.resources.map((resource) => resource.effectiveCost)).toEqual(
      data.resources.map((_, index) => 6000 - index),
    );
    // The totals count every row, not only the resources returned.
    expect(data.totals).toEqual([
      expect.objectContaining({
        connectionId,
        resources: 6000,
        records: 6000n,
        effectiveCost: (6000 * 6001) / 2,
      }),
    ]);
  });

  it('answers in full when it fits', async () => {
    const connectionId = (await connections.createConnection({ name: 'narrow', provider: 'aws' }, team)).id;
    await costData.uploadCostData(uploadParts(connectionId, wideFile(50, 10)), team);
    const data = await scanData.getScanData({ connectionIds: [connectionId] }, team);
    expect(data.truncated).toBe(false);
    expect(data.resources).toHaveLength(50);
    expect(data.tagUsage.filter((usage) => usage.key === 'owner')).toHaveLength(50);
    expect(data.daily).toEqual([
      expect.objectContaining({
        connectionId,
        day: '2025-03-10',
        serviceName: 'EC2',
        effectiveCost: (50 * 51) / 2,
      }),
    ]);
  });

  it('needs the team on the call', async () => {
    await expect(scanData.getScanData({ connectionIds: [] })).rejects.toMatchObject({
      name: 'BadRequestError',
    });
  });
});

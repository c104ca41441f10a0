import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { costs } from '@costgov/contracts';
import { newId } from '@costgov/ids';
import type { RpcClient } from '@costgov/rpc';
import { focusFile, uploadParts } from '@costgov/testing';
import { startCosts, type CostsUnderTest } from './fixture';

const team = { teamId: newId('team') };

let costsService: CostsUnderTest;
let scanData: RpcClient<typeof costs.ScanDataService>;
let connectionId: string;
/** Resource ids of the uploaded file (one row each, plus one row without a resource id). */
const count = 1200;
const ids = Array.from({ length: count }, (_, i) => `i-${String(i).padStart(5, '0')}`);

beforeAll(async () => {
  costsService = await startCosts();
  scanData = costsService.client(costs.ScanDataService, { deadlineMs: 60_000 });
  const { connections, costData } = costsService.clients;
  connectionId = (await connections.createConnection({ name: 'shards', provider: 'aws' }, team)).id;
  const file = focusFile(
    [...ids.map((_, i) => i + 1), 7],
    // The last row carries no resource id: counted in the totals, never a resource.
    { month: '2025-03', resourceId: (i) => ids[i] ?? '', chargeDay: () => new Date('2025-03-10T00:00:00Z') },
  );
  await costData.uploadCostData(uploadParts(connectionId, file), team);
}, 60_000);

afterAll(() => costsService?.stop());

/** Every resource id of one shard, page by page. */
async function shardIds(shard: { shardIndex: number; shardCount: number }, maxResources = 150) {
  const found: string[] = [];
  let after = { afterConnectionId: '', afterResourceId: '' };
  let until;
  let resourceCount = -1;
  for (;;) {
    const page = await scanData.getScanData(
      {
        connectionIds: [connectionId],
        maxResources,
        parts: costs.ScanDataParts.RESOURCES,
        ...shard,
        ...after,
        until,
      },
      team,
    );
    if (resourceCount < 0)
      resourceCount = (
        await scanData.getScanData(
          { connectionIds: [connectionId], parts: costs.ScanDataParts.COUNT, ...shard },
          team,
        )
      ).resourceCount;
    // RESOURCES: the light aggregates on the first page, never the daily series nor tag usage.
    expect(page.daily).toEqual([]);
    expect(page.tagUsage).toEqual([]);
    found.push(...page.resources.map((resource) => resource.resourceId));
    if (!page.hasMore) return { found, resourceCount };
    until = page.windowEnd;
    const last = page.resources.at(-1)!;
    after = { afterConnectionId: last.connectionId, afterResourceId: last.resourceId };
  }
}

describe('GetScanData shards and parts', () => {
  it('splits the resources into shards that together hold each exactly once', async () => {
    const shardCount = 5;
    const all: string[] = [];
    for (let shardIndex = 0; shardIndex < shardCount; shardIndex++) {
      const { found, resourceCount } = await shardIds({ shardIndex, shardCount });
      expect(resourceCount).toBe(found.length);
      // A hash spreads 1200 ids over 5 shards: none empty, none holding most of them.
      expect(found.length).toBeGreaterThan(0);
      expect(found.length).toBeLessThan(count / 2);
      all.push(...found);
      // The same shard asked again holds the same resources (a stable hash).
      if (shardIndex === 0) expect((await shardIds({ shardIndex, shardCount }, 1000)).found).toEqual(found);
    }
    expect(all.length).toBe(count);
    expect([...all].sort()).toEqual([...ids].sort());
    // One shard (count 0 or 1) is every resource.
    for (const shardCount of [0, 1]) {
      const { found, resourceCount } = await shardIds({ shardIndex: 0, shardCount }, 1000);
      expect(found.sort()).toEqual([...ids].sort());
      expect(resourceCount).toBe(count);
    }
  });

  it('answers the count alone and the aggregates alone', async () => {
    const counted = await scanData.getScanData(
      { connectionIds: [connectionId], parts: costs.ScanDataParts.COUNT },
      team,
    );
    expect(counted.resourceCount).toBe(count);
    expect(counted.resources).toEqual([]);
    expect(counted.totals).toEqual([]);
    expect(counted.windowEnd).toBeDefined();

    const aggregates = await scanData.getScanData(
      { connectionIds: [connectionId], parts: costs.ScanDataParts.AGGREGATES, until: counted.windowEnd },
      team,
    );
    expect(aggregates.resources).toEqual([]);
    expect(aggregates.hasMore).toBe(false);
    expect(aggregates.daily.length).toBeGreaterThan(0);
    // Totals over every row: the resources' costs 1..count and the row without a resource id.
    expect(aggregates.totals[0]!.effectiveCost).toBeCloseTo((count * (count + 1)) / 2 + 7, 6);
    expect(aggregates.totals[0]!.unattributedCost).toBeCloseTo(7, 6);
  });

  it('refuses shards and parts it cannot answer with a clear InvalidArgument', async () => {
    const cases: Array<[Omit<Partial<costs.GetScanDataRequest>, '$typeName' | '$unknown'>, string]> = [
      [{ shardIndex: 3, shardCount: 3 }, 'shard_index'],
      [{ shardIndex: 1, shardCount: 0 }, 'shard_index'],
      [{ shardIndex: 0, shardCount: 5000 }, 'shard_count'],
      [{ parts: 9 as costs.ScanDataParts }, 'parts'],
      [
        { parts: costs.ScanDataParts.COUNT, afterConnectionId: connectionId, afterResourceId: 'i-1' },
        'after_resource_id',
      ],
    ];
    for (const [request, field] of cases) {
      await expect(
        scanData.getScanData({ connectionIds: [connectionId], ...request }, team),
        JSON.stringify(request),
      ).rejects.toMatchObject({
        name: 'ValidationError',
        details: [expect.objectContaining({ field, message: expect.any(String) })],
      });
    }
  });
});

import { toBinary } from '@bufbuild/protobuf';
import { timestampDate, timestampFromDate } from '@bufbuild/protobuf/wkt';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { costs } from '@costgov/contracts';
import { newId } from '@costgov/ids';
import type { RpcClient } from '@costgov/rpc';
import { focusFile, focusSample, uploadParts, usageBased } from '@costgov/testing';
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
  it('returns every resource exactly once across pages, each page under the gRPC message limit', async () => {
    const connectionId = (await connections.createConnection({ name: 'wide', provider: 'aws' }, team)).id;
    // 20,000 resources with 600 bytes of tags each: about 20 MB of resources, several messages' worth.
    const count = 20_000;
    const file = wideFile(count, 600);
    await costData.uploadCostData(uploadParts(connectionId, file), team);
    // What the file holds, by the test's own reading: resource id -> cost (the ResourceId column).
    const header = file.split('\n')[0]!.split(',');
    const idColumn = header.indexOf('ResourceId');
    const costColumn = header.indexOf('EffectiveCost');
    const expected = new Map<string, number>();
    for (const line of file.trim().split('\n').slice(1)) {
      const cells = line.split(',');
      expected.set(cells[idColumn]!, (expected.get(cells[idColumn]!) ?? 0) + Number(cells[costColumn]));
    }
    expect(expected.size).toBe(count);

    const seen = new Map<string, number>();
    const first = await scanData.getScanData({ connectionIds: [connectionId], maxResources: 10_000 }, team);
    let page = first;
    let pages = 0;
    for (;;) {
      pages++;
      const bytes = toBinary(costs.GetScanDataResponseSchema, page).length;
      expect(bytes).toBeLessThan(4 * 1024 * 1024);
      // Filled near the 3 MB costs aims at, not cut at half by an estimate of the size as JSON (whose field
      // names doubled it): each page but the last carries more than 2 MB.
      if (page.hasMore) expect(bytes).toBeGreaterThan(2 * 1024 * 1024);
      if (pages > 1) expect(page.totals).toEqual([]);
      for (const resource of page.resources) {
        expect(seen.has(resource.resourceId)).toBe(false);
        seen.set(resource.resourceId, resource.effectiveCost);
        expect(resource.tags.note).toHaveLength(600);
      }
      if (!page.hasMore) break;
      const last = page.resources.at(-1)!;
      page = await scanData.getScanData(
        {
          connectionIds: [connectionId],
          maxResources: 10_000,
          until: first.windowEnd,
          afterConnectionId: last.connectionId,
          afterResourceId: last.resourceId,
        },
        team,
      );
    }
    // Bounded by size, not by the 10,000 asked for: more pages than count / 10,000.
    expect(pages).toBeGreaterThan(2);
    expect(seen).toEqual(expected);
    const total = [...expected.values()].reduce((sum, cost) => sum + cost, 0);
    expect(first.totals).toEqual([
      expect.objectContaining({
        connectionId,
        resources: count,
        records: BigInt(count),
        effectiveCost: total,
      }),
    ]);
  }, 120_000);

  it('answers in full when it fits', async () => {
    const connectionId = (await connections.createConnection({ name: 'narrow', provider: 'aws' }, team)).id;
    await costData.uploadCostData(uploadParts(connectionId, wideFile(50, 10)), team);
    const data = await scanData.getScanData({ connectionIds: [connectionId] }, team);
    expect(data.hasMore).toBe(false);
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

  it('describes a resource by the costliest row of its costliest charge period, and tags by its latest', async () => {
    const header =
      'BilledCost,EffectiveCost,BillingCurrency,BillingPeriodStart,BillingPeriodEnd,ChargePeriodStart,ChargePeriodEnd,ServiceName,ResourceId,ChargeDescription,Tags';
    const row = (
      resource: string,
      [billed, effective]: [number, number],
      day: number,
      service: string,
      description: string,
      tags = '',
    ) => {
      const start = `2025-03-${String(day).padStart(2, '0')}T00:00:00Z`;
      const end = `2025-03-${String(day).padStart(2, '0')}T01:00:00Z`;
      const tagCell = tags ? `"${tags.replaceAll('"', '""')}"` : '';
      return `${billed},${effective},USD,2025-03-01T00:00:00Z,2025-04-01T00:00:00Z,${start},${end},${service},${resource},${description},${tagCell}`;
    };
    const file = [
      header,
      // r-1: the 10th's period costs 11 (5 + 6), the 12th's 10 in one row, the costliest row: the
      // resource is described by the 10th's costliest row; its tags are the 12th's (the latest).
      row('r-1', [5, 5], 10, 'S-A1', 'small in A', '{"env":"a"}'),
      row('r-1', [6, 6], 10, 'S-A2', 'big in A', '{"env":"a"}'),
      row('r-1', [10, 10], 12, 'S-B', 'costliest row', '{"env":"b"}'),
      // r-2: two periods of the same effective and billed cost: the later one (though the earlier one's
      // description comes first).
      row('r-2', [4, 4], 10, 'S-C', 'a-older'),
      row('r-2', [4, 4], 11, 'S-D', 'z-newer'),
      // r-3: one period, rows of the same costs: the first description in byte order ('B' before 'b'),
      // an empty one last; tags of the same period: the first as text.
      row('r-3', [3, 3], 10, 'S-E1', 'b-second', '{"k":"2"}'),
      row('r-3', [3, 3], 10, 'S-E2', '', '{"k":"3"}'),
      row('r-3', [3, 3], 10, 'S-E3', 'B-first', '{"k":"1"}'),
      // r-4: the same effective cost: the higher billed cost.
      row('r-4', [3, 3], 10, 'S-F1', 'a-lower-billed'),
      row('r-4', [4, 3], 10, 'S-F2', 'z-higher-billed'),
      // r-5: two periods of the same effective cost: the one billed more (though the other is later and
      // its description comes first).
      row('r-5', [6, 4], 10, 'S-G1', 'z-period-billed-more'),
      row('r-5', [5, 4], 11, 'S-G2', 'a-later'),
    ].join('\n');
    const connectionId = (await connections.createConnection({ name: 'costliest', provider: 'aws' }, team))
      .id;
    await costData.uploadCostData(uploadParts(connectionId, `${file}\n`), team);
    const data = await scanData.getScanData({ connectionIds: [connectionId] }, team);
    const described = Object.fromEntries(
      data.resources.map((r) => [r.resourceId, [r.chargeDescription, r.serviceName, r.tags]]),
    );
    expect(described).toEqual({
      'r-1': ['big in A', 'S-A2', { env: 'b' }],
      'r-2': ['z-newer', 'S-D', {}],
      'r-3': ['B-first', 'S-E3', { k: '1' }],
      'r-4': ['z-higher-billed', 'S-F2', {}],
      'r-5': ['z-period-billed-more', 'S-G1', {}],
    });
    // The sums are every row's, whichever row describes the resource.
    expect(data.resources.find((r) => r.resourceId === 'r-1')).toMatchObject({
      effectiveCost: 21,
      billedCost: 21,
    });
  });

  it("ends each connection's data at its own last usage-based charge, capped at now", async () => {
    const header =
      'BilledCost,EffectiveCost,BillingCurrency,BillingPeriodStart,BillingPeriodEnd,ChargePeriodStart,ChargePeriodEnd,ChargeCategory,ChargeFrequency,ServiceName,ResourceId';
    const period = '2025-03-01T00:00:00Z,2025-04-01T00:00:00Z';
    /** Daily usage of `i-1` from 1 March to the day before `through`, then rows of the file's own choosing. */
    const file = (through: number, extra: string[]) => {
      const lines = [];
      for (let day = 1; day < through; day++) {
        const start = `2025-03-${String(day).padStart(2, '0')}T00:00:00Z`;
        const end = new Date(Date.parse(start) + 86_400_000).toISOString().replace('.000Z', 'Z');
        lines.push(`10,10,USD,${period},${start},${end},Usage,Usage-Based,EC2,i-1`);
      }
      return [header, ...lines, ...extra].join('\n') + '\n';
    };
    // A mid-month export (usage to the 15th) whose tax and support rows span the month, to 1 April.
    const midMonth = (await connections.createConnection({ name: 'mid-month', provider: 'aws' }, team)).id;
    await costData.uploadCostData(
      uploadParts(
        midMonth,
        file(16, [
          `5,5,USD,${period},2025-03-01T00:00:00Z,2025-04-01T00:00:00Z,Tax,Recurring,Tax,`,
          `100,100,USD,${period},2025-03-01T00:00:00Z,2025-04-01T00:00:00Z,Usage,Recurring,Support,`,
        ]),
      ),
      team,
    );
    // Another connection whose export lags less (usage to the 28th), with one row dated next year.
    const later = (await connections.createConnection({ name: 'later', provider: 'aws' }, team)).id;
    await costData.uploadCostData(uploadParts(later, file(29, [])), team);
    const future = new Date(Date.now() + 365 * 86_400_000);
    const futureEnd = new Date(future.getTime() + 3_600_000);
    const billing = `${future.toISOString().slice(0, 7)}-01T00:00:00Z`;
    const billingEnd = new Date(Date.UTC(future.getUTCFullYear(), future.getUTCMonth() + 1, 1));
    const ahead = (await connections.createConnection({ name: 'ahead', provider: 'aws' }, team)).id;
    await costData.uploadCostData(
      uploadParts(
        ahead,
        [
          header,
          `1,1,USD,${billing},${billingEnd.toISOString()},${future.toISOString()},${futureEnd.toISOString()},Usage,Usage-Based,EC2,i-9`,
        ].join('\n') + '\n',
      ),
      team,
    );

    const data = await scanData.getScanData(
      { connectionIds: [midMonth, later], until: timestampFromDate(new Date('2025-04-01T00:00:00Z')) },
      team,
    );
    // Every row counts towards the span; the tax and support rows run to 1 April.
    expect(timestampDate(data.dataEnd!).toISOString()).toBe('2025-04-01T00:00:00.000Z');
    const ends = Object.fromEntries(
      data.totals.map((totals) => [totals.connectionId, timestampDate(totals.dataEnd!).toISOString()]),
    );
    expect(ends).toEqual({
      [midMonth]: '2025-03-16T00:00:00.000Z',
      [later]: '2025-03-29T00:00:00.000Z',
    });

    const before = Date.now();
    const aheadData = await scanData.getScanData({ connectionIds: [ahead] }, team);
    const aheadEnd = timestampDate(aheadData.totals[0]!.dataEnd!).getTime();
    expect(aheadEnd).toBeGreaterThanOrEqual(before);
    expect(aheadEnd).toBeLessThanOrEqual(Date.now());
  });

  it("splits each day's usage-based cost out of the FOCUS sample by the one rule, whatever the case", async () => {
    const connectionId = (await connections.createConnection({ name: 'sample', provider: 'aws' }, team)).id;
    await costData.uploadCostData(uploadParts(connectionId, focusSample.sample), team);
    const data = await scanData.getScanData(
      { connectionIds: [connectionId], until: timestampFromDate(new Date('2024-10-02T00:00:00Z')) },
      team,
    );
    // The test's own reading of the sample (csv-parse) and of the rule (the test kit's usageBased): its
    // 'Usage-based' usage rows count, its adjustments marked 'Usage-based' and its credit do not.
    const expected = new Map<string, { effective: number; usage: number }>();
    for (const row of focusSample.rows) {
      const day = expected.get(row.day) ?? { effective: 0, usage: 0 };
      day.effective += row.effective;
      if (usageBased(row.category, row.frequency)) day.usage += row.effective;
      expected.set(row.day, day);
    }
    expect(focusSample.rows.some((row) => row.frequency === 'Usage-based' && row.category === 'Usage')).toBe(
      true,
    );
    expect(
      focusSample.rows.some((row) => row.frequency === 'Usage-based' && row.category === 'Adjustment'),
    ).toBe(true);
    const perDay = new Map<string, { effective: number; usage: number }>();
    for (const row of data.daily) {
      const day = perDay.get(row.day) ?? { effective: 0, usage: 0 };
      day.effective += row.effectiveCost;
      day.usage += row.usageCost;
      perDay.set(row.day, day);
    }
    expect([...perDay.keys()].sort()).toEqual([...expected.keys()].sort());
    for (const [day, sums] of expected) {
      expect(perDay.get(day)!.effective, day).toBeCloseTo(sums.effective, 6);
      expect(perDay.get(day)!.usage, day).toBeCloseTo(sums.usage, 6);
    }
  });

  it('needs the team on the call', async () => {
    await expect(scanData.getScanData({ connectionIds: [] })).rejects.toMatchObject({
      name: 'BadRequestError',
    });
  });
});

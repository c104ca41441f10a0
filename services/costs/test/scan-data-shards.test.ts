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
const connectionsClient = () => costsService.clients.connections;
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

/** Every resource id of one shard (a range of ids; empty bounds: open), page by page. */
async function shardIds(
  range: { resourceIdFrom?: string; resourceIdTo?: string },
  maxResources = 150,
  connectionIds = [connectionId],
) {
  const found: string[] = [];
  const keys: Array<[string, string]> = [];
  let after = { afterConnectionId: '', afterResourceId: '' };
  let until;
  for (;;) {
    const page = await scanData.getScanData(
      { connectionIds, maxResources, parts: costs.ScanDataParts.RESOURCES, ...range, ...after, until },
      team,
    );
    // RESOURCES: the light aggregates on the first page, never the daily series nor tag usage.
    expect(page.daily).toEqual([]);
    expect(page.tagUsage).toEqual([]);
    found.push(...page.resources.map((resource) => resource.resourceId));
    keys.push(...page.resources.map((r): [string, string] => [r.connectionId, r.resourceId]));
    if (!page.hasMore) break;
    until = page.windowEnd;
    const last = page.resources.at(-1)!;
    after = { afterConnectionId: last.connectionId, afterResourceId: last.resourceId };
  }
  const { resourceCount } = await scanData.getScanData(
    { connectionIds, parts: costs.ScanDataParts.COUNT, until, ...range },
    team,
  );
  return { found, keys, resourceCount };
}

/** Byte order (UTF-8), the order Postgres gives COLLATE "C". */
const bytes = (a: string, b: string) => Buffer.compare(Buffer.from(a), Buffer.from(b));

/**
 * The shards' ranges from the bounds costs answers for `count` shards: with the resource count (COUNT),
 * or with the aggregates (AGGREGATES, a plan's one pass).
 */
async function split(
  count: number,
  connectionIds = [connectionId],
  parts: costs.ScanDataParts = costs.ScanDataParts.COUNT,
) {
  const { shardBounds } = await scanData.getScanData({ connectionIds, parts, splitInto: count }, team);
  const ranges = Array.from({ length: shardBounds.length + 1 }, (_, i) => ({
    resourceIdFrom: shardBounds[i - 1] ?? '',
    resourceIdTo: shardBounds[i] ?? '',
  }));
  return { bounds: shardBounds, ranges };
}

describe('GetScanData shards and parts', () => {
  it('splits the resources into key ranges that together hold each exactly once', async () => {
    for (const shardCount of [2, 5, 7]) {
      const { bounds, ranges } = await split(shardCount);
      expect(bounds).toHaveLength(shardCount - 1);
      // The aggregates' pass numbers the same ids: the same bounds.
      expect((await split(shardCount, [connectionId], costs.ScanDataParts.AGGREGATES)).bounds).toEqual(
        bounds,
      );
      const all: string[] = [];
      for (const range of ranges) {
        const { found, resourceCount } = await shardIds(range);
        expect(resourceCount).toBe(found.length);
        // Ranges of about equal size: the ids split as evenly as whole numbers allow.
        expect(found.length).toBeGreaterThanOrEqual(Math.floor(count / shardCount));
        expect(found.length).toBeLessThanOrEqual(Math.ceil(count / shardCount));
        all.push(...found);
      }
      // In page order, the shards one after the other: every id once, in byte order.
      expect(all).toEqual([...ids].sort(bytes));
    }
    // A range asked again holds the same resources, whatever the page size.
    const { ranges } = await split(5);
    expect((await shardIds(ranges[2]!, 1000)).found).toEqual((await shardIds(ranges[2]!, 7)).found);
    // No bounds: every resource.
    const { found, resourceCount } = await shardIds({}, 1000);
    expect(found).toEqual([...ids].sort(bytes));
    expect(resourceCount).toBe(count);
    // No split asked (0 or 1): no bounds.
    expect((await split(1)).bounds).toEqual([]);
  });

  it('keeps an id billed by two connections in one shard, odd ids included, and empties spare shards', async () => {
    // Ids sharing prefixes, of several scripts and widths, with CSV's separators in them; most billed by
    // both connections, some by one.
    const odd = [
      'i-1',
      'i-10',
      'i-100',
      'i-1a',
      'i-1/',
      'i-2',
      'I-1',
      'a b',
      'a,b',
      'a"b',
      'é',
      'e\u0301',
      'Ω',
      '\u{1F600}',
      '\uFFFD',
      '\u00ff',
      'z',
    ];
    const both = odd.filter((_, i) => i % 3 !== 0);
    const firstOnly = odd.filter((_, i) => i % 3 === 0);
    const quote = (id: string) => `"${id.replaceAll('"', '""')}"`;
    const upload = async (name: string, billed: string[]) => {
      const id = (await connectionsClient().createConnection({ name, provider: 'aws' }, team)).id;
      const file = focusFile(
        billed.map((_, i) => i + 1),
        {
          month: '2025-03',
          resourceId: (i) => quote(billed[i]!),
          chargeDay: () => new Date('2025-03-10T00:00:00Z'),
        },
      );
      await costsService.clients.costData.uploadCostData(uploadParts(id, file), team);
      return id;
    };
    const first = await upload('odd-1', [...both, ...firstOnly]);
    const second = await upload('odd-2', [...both].reverse());
    const pairs = [
      ...[...both, ...firstOnly].map((id) => `${first} ${id}`),
      ...both.map((id) => `${second} ${id}`),
    ];
    const distinct = [...new Set(odd)].sort(bytes);

    for (const shardCount of [1, 2, 3, 4, distinct.length, distinct.length + 4]) {
      const { bounds, ranges } = await split(shardCount, [first, second]);
      expect(bounds, `${shardCount} shards`).toHaveLength(Math.max(shardCount, 1) - 1);
      const withAggregates = await split(shardCount, [first, second], costs.ScanDataParts.AGGREGATES);
      expect(withAggregates.bounds, `${shardCount} shards`).toEqual(bounds);
      // Bounds are ids of the data, in byte order (a repeated bound: an empty shard).
      for (const bound of bounds) expect(distinct).toContain(bound);
      expect([...bounds].sort(bytes)).toEqual(bounds);
      const shardOf = new Map<string, number>();
      const seen: string[] = [];
      const sizes: number[] = [];
      for (const [index, range] of ranges.entries()) {
        // Two resources a page: the cursor crosses connections and ranges' edges.
        const { keys, resourceCount } = await shardIds(range, 2, [first, second]);
        expect(resourceCount).toBe(keys.length);
        // Pages keep (connection id, resource id in byte order) order.
        const sorted = [...keys].sort(([c1, r1], [c2, r2]) => (c1 === c2 ? bytes(r1, r2) : c1 < c2 ? -1 : 1));
        expect(keys).toEqual(sorted);
        for (const [, id] of keys) {
          expect(shardOf.get(id) ?? index, id).toBe(index);
          shardOf.set(id, index);
        }
        seen.push(...keys.map(([c, id]) => `${c} ${id}`));
        sizes.push(new Set(keys.map(([, id]) => id)).size);
      }
      // Every (connection, resource) pair in exactly one shard.
      expect([...seen].sort(), `${shardCount} shards`).toEqual([...pairs].sort());
      // Distinct ids split evenly; more shards than ids: some are empty, none holds two ids.
      const n = distinct.length;
      const k = Math.max(shardCount, 1);
      expect(sizes.reduce((a, b) => a + b, 0)).toBe(n);
      expect(Math.max(...sizes)).toBe(Math.ceil(n / k));
      expect(Math.min(...sizes)).toBe(Math.floor(n / k));
    }
    // The aggregates count the window's resources as COUNT does: each (connection, id) pair once, an id
    // billed by both connections twice.
    const aggregates = await scanData.getScanData(
      { connectionIds: [first, second], parts: costs.ScanDataParts.AGGREGATES },
      team,
    );
    expect(aggregates.resourceCount).toBe(pairs.length);
    expect(aggregates.resourceCount).toBeGreaterThan(distinct.length);
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
    // With its resource count (the row without a resource id is none), as the first page of RESOURCES
    // (the light aggregates), even a page of a shard: the window's count.
    expect(aggregates.resourceCount).toBe(count);
    // Asked with a split, the same aggregates and count, and the bounds.
    const splitToo = await scanData.getScanData(
      {
        connectionIds: [connectionId],
        parts: costs.ScanDataParts.AGGREGATES,
        until: counted.windowEnd,
        splitInto: 4,
      },
      team,
    );
    expect({ ...splitToo, shardBounds: [] }).toEqual(aggregates);
    expect(splitToo.shardBounds).toHaveLength(3);
    const firstPage = await scanData.getScanData(
      {
        connectionIds: [connectionId],
        parts: costs.ScanDataParts.RESOURCES,
        until: counted.windowEnd,
        maxResources: 3,
        resourceIdTo: ids[5]!,
      },
      team,
    );
    expect(firstPage.resources).toHaveLength(3);
    expect(firstPage.resourceCount).toBe(count);
    expect(aggregates.daily.length).toBeGreaterThan(0);
    // Totals over every row: the resources' costs 1..count and the row without a resource id.
    expect(aggregates.totals[0]!.effectiveCost).toBeCloseTo((count * (count + 1)) / 2 + 7, 6);
    expect(aggregates.totals[0]!.unattributedCost).toBeCloseTo(7, 6);

    // PAGES: resources alone, even on the first page (a shard whose plan read the light aggregates).
    const pages = await scanData.getScanData(
      {
        connectionIds: [connectionId],
        parts: costs.ScanDataParts.PAGES,
        until: counted.windowEnd,
        maxResources: 10,
      },
      team,
    );
    expect(pages.resources).toHaveLength(10);
    expect(pages.hasMore).toBe(true);
    expect([pages.totals, pages.commitments, pages.daily, pages.tagUsage, pages.currency]).toEqual([
      [],
      [],
      [],
      [],
      '',
    ]);
    expect(pages.dataEnd).toBeUndefined();
  });

  it('refuses shards and parts it cannot answer with a clear InvalidArgument', async () => {
    const cases: Array<[Omit<Partial<costs.GetScanDataRequest>, '$typeName' | '$unknown'>, string]> = [
      [{ resourceIdFrom: 'i-2', resourceIdTo: 'i-10' }, 'resource_id_to'],
      // Byte order: 'é' (0xC3 0xA9) is after 'z', though a locale may sort it before.
      [{ resourceIdFrom: 'é', resourceIdTo: 'z' }, 'resource_id_to'],
      [{ resourceIdFrom: 'a\0b' }, 'resource_id_from'],
      [{ parts: costs.ScanDataParts.COUNT, splitInto: 5000 }, 'split_into'],
      [{ parts: costs.ScanDataParts.RESOURCES, splitInto: 2 }, 'split_into'],
      [{ parts: costs.ScanDataParts.AGGREGATES, splitInto: 5000 }, 'split_into'],
      // The aggregates are the whole window's: so is a split asked with them.
      [{ parts: costs.ScanDataParts.AGGREGATES, splitInto: 2, resourceIdFrom: 'i-2' }, 'split_into'],
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

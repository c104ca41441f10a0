import { readFileSync } from 'node:fs';
import path from 'node:path';
import { parse } from 'csv-parse/sync';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { costsModule } from '@costgov/costs';
import { costs } from '@costgov/contracts';
import { newId } from '@costgov/ids';
import { createLogger } from '@costgov/log';
import { createRpcClient, type RpcClient } from '@costgov/rpc';
import { startService, type RunningService } from '@costgov/runtime';
import { freshDb, testBus } from '@costgov/testing';
import { scanDataOf, scanProject } from '../../src/rules/scan';

const logger = createLogger('test', 'silent');
const team = { teamId: newId('team') };
const sample = readFileSync(path.resolve(__dirname, '../../../../data/focus/focus_sample_1000.csv'));
const requiredTags = ['environment', 'application'];

let service: RunningService;
let bus: Awaited<ReturnType<typeof testBus>>;
let connections: RpcClient<typeof costs.ConnectionsService>;
let costData: RpcClient<typeof costs.CostDataService>;
let scanData: RpcClient<typeof costs.ScanDataService>;
let connectionId: string;

async function* parts(id: string, body: Uint8Array) {
  yield { part: { case: 'start' as const, value: { connectionId: id, contentEncoding: 'identity' } } };
  for (let offset = 0; offset < body.length; offset += 64 * 1024)
    yield { part: { case: 'chunk' as const, value: body.subarray(offset, offset + 64 * 1024) } };
}

beforeAll(async () => {
  bus = await testBus(logger);
  const db = await freshDb('costs');
  service = await startService(costsModule(), {
    logger,
    bus,
    openDb: async () => db,
    dataDir: 'memory',
    grpcAddress: '127.0.0.1:0',
  });
  const address = `127.0.0.1:${service.port}`;
  connections = createRpcClient(costs.ConnectionsService, address);
  costData = createRpcClient(costs.CostDataService, address);
  scanData = createRpcClient(costs.ScanDataService, address);
  connectionId = (await connections.createConnection({ name: 'sample', provider: 'aws' }, team)).id;
  await costData.uploadCostData(parts(connectionId, sample), team);
}, 60_000);

afterAll(async () => {
  connections?.close();
  costData?.close();
  scanData?.close();
  await service?.stop();
  await bus?.close();
});

// ── The file as the test reads it itself ──

interface Row {
  resourceId: string;
  start: number;
  end: number;
  day: string;
  month: string;
  effective: number;
  service: string;
  tags: Record<string, string>;
}

const missing = (value: string | undefined) => value === undefined || value === '' || value === 'NULL';
const utc = (text: string) => Date.parse(`${text.replace(' ', 'T')}Z`);

const rows: Row[] = (parse(sample, { columns: true, bom: true }) as Record<string, string>[]).map(
  (record) => ({
    resourceId: missing(record.ResourceId) ? '' : record.ResourceId!,
    start: utc(record.ChargePeriodStart!),
    end: utc(record.ChargePeriodEnd!),
    day: record.ChargePeriodStart!.slice(0, 10),
    month: record.ChargePeriodStart!.slice(0, 7),
    effective: Number(record.EffectiveCost),
    service: missing(record.ServiceName) ? '' : record.ServiceName!,
    tags: missing(record.Tags) ? {} : (JSON.parse(record.Tags!) as Record<string, string>),
  }),
);

const sum = (list: Row[]) => list.reduce((total, row) => total + row.effective, 0);

function byResource(): Map<string, Row[]> {
  const groups = new Map<string, Row[]>();
  for (const row of rows.filter((r) => r.resourceId))
    groups.set(row.resourceId, [...(groups.get(row.resourceId) ?? []), row]);
  return groups;
}

/** What the twelve rules should report over this file, worked out from the rows alone. */
function expectedFindings(): string[] {
  const found: string[] = [];
  const resources = byResource();
  const windowEnd = Math.max(...rows.map((row) => row.end));
  const windowHours = 62 * 24;
  const total = sum(rows);

  // A resource is judged on the tags of its latest row.
  for (const [id, list] of resources) {
    const latest = list.reduce((a, b) => (b.start > a.start ? b : a));
    if (requiredTags.some((key) => !(latest.tags[key] ?? '').trim()))
      found.push(`tags-missing-required ${id}`);
  }

  // Keys that differ only in case, spaces or separators, or env for environment, are one key.
  const foldKey = (key: string) => {
    const folded = key.toLowerCase().replace(/[^a-z0-9]/g, '');
    return folded === 'env' ? 'environment' : folded;
  };
  const keySpellings = new Map<string, Set<string>>();
  for (const row of rows)
    for (const key of Object.keys(row.tags))
      keySpellings.set(foldKey(key), (keySpellings.get(foldKey(key)) ?? new Set()).add(key));
  for (const [key, spellings] of keySpellings)
    if (spellings.size > 1) found.push(`tags-inconsistent-keys tag-key:${key}`);

  const foldValue = (value: string) => {
    const folded = value.toLowerCase().replace(/[^a-z0-9]/g, '');
    return ({ prod: 'production', dev: 'development' } as Record<string, string>)[folded] ?? folded;
  };
  const valueSpellings = new Map<string, Set<string>>();
  for (const row of rows)
    for (const [key, value] of Object.entries(row.tags)) {
      if (!foldValue(value)) continue;
      const id = `${key}=${foldValue(value)}`;
      valueSpellings.set(id, (valueSpellings.get(id) ?? new Set()).add(value));
    }
  for (const [id, spellings] of valueSpellings)
    if (spellings.size > 1) found.push(`tags-inconsistent-values tag-value:${id}`);

  const untagged = sum(rows.filter((row) => Object.keys(row.tags).length === 0));
  if (total > 0 && untagged / total >= 0.1) found.push(`spend-unallocated-share ${connectionId}`);
  const unattributed = sum(rows.filter((row) => !row.resourceId));
  if (total > 0 && unattributed / total >= 0.2) found.push(`spend-unattributed-share ${connectionId}`);

  // New resources (first billed in the last 7 days) at 100 a month or more and 5% of the bill.
  const monthlyBill = (total / 62) * 30.44;
  for (const [id, list] of resources) {
    const first = Math.min(...list.map((row) => row.start));
    if (windowEnd - first > 7 * 86_400_000) continue;
    const runRate = (sum(list) / Math.max(1, (windowEnd - first) / 86_400_000)) * 30.44;
    if (runRate >= Math.max(100, 0.05 * monthlyBill)) found.push(`spend-new-costly-resource ${id}`);
  }

  // The rules needing a full month of hours, a second month or a spike of 10 or more cannot fire here;
  // these hold for this file, and each is checked rather than assumed.
  const hoursOf = (list: Row[]) => new Set(list.map((row) => row.start)).size;
  expect(Math.max(...[...resources.values()].map(hoursOf))).toBeLessThan(0.8 * windowHours);
  expect(new Set(rows.map((row) => row.month)).size).toBe(1);
  const daily = new Map<string, number>();
  for (const row of rows) daily.set(row.day, (daily.get(row.day) ?? 0) + row.effective);
  expect(Math.max(...[...daily.values()].map(Math.abs))).toBeLessThan(10);

  return found.sort();
}

describe('a scan over the FOCUS sample (data/focus/focus_sample_1000.csv)', () => {
  it('costs sums the rows per resource as the file does', async () => {
    const data = scanDataOf(await scanData.getScanData({ connectionIds: [connectionId] }, team));
    const resources = byResource();
    expect(data.truncated).toBe(false);
    expect(data.currency).toBe('USD');
    expect(data.windowEnd).toBe('2024-10-01T00:00:00.000Z');
    expect(data.resources).toHaveLength(resources.size);
    for (const resource of data.resources) {
      const list = resources.get(resource.resourceId)!;
      expect(resource.effectiveCost, resource.resourceId).toBeCloseTo(sum(list), 9);
      const periods = new Map(list.map((row) => [row.start, row.end]));
      const hours = [...periods].reduce((total, [start, end]) => total + (end - start) / 3_600_000, 0);
      expect(resource.hoursSeen, resource.resourceId).toBe(Math.round(hours));
      expect(resource.daysSeen).toBe(new Set(list.map((row) => row.day)).size);
      expect(list.map((row) => row.service)).toContain(resource.serviceName);
    }
    const [totals] = data.totals;
    expect(totals!.effectiveCost).toBeCloseTo(sum(rows), 9);
    expect(totals!.untaggedCost).toBeCloseTo(
      sum(rows.filter((row) => Object.keys(row.tags).length === 0)),
      9,
    );
    expect(totals!.records).toBe(rows.length);
    const perDay = new Map<string, number>();
    for (const row of data.daily) perDay.set(row.day, (perDay.get(row.day) ?? 0) + row.effectiveCost);
    for (const day of new Set(rows.map((row) => row.day)))
      expect(perDay.get(day), day).toBeCloseTo(sum(rows.filter((row) => row.day === day)), 9);
  });

  it('finds what the file holds', async () => {
    const outcome = await scanProject(
      { scanData },
      {
        teamId: team.teamId,
        projectId: newId('project'),
        connectionIds: [connectionId],
        requiredTags,
        now: new Date(),
      },
    );
    expect(outcome.resourcesScanned).toBe(byResource().size);
    expect(outcome.results.map((result) => `${result.ruleId} ${result.resourceId}`).sort()).toEqual(
      expectedFindings(),
    );
    for (const result of outcome.results) {
      expect(result.currency).toBe('USD');
      expect(result.title && result.description && result.recommendation).toBeTruthy();
    }
  });

  it('shows nothing of a connection to another team', async () => {
    const other = { teamId: newId('team') };
    const data = await scanData.getScanData({ connectionIds: [connectionId] }, other);
    expect(data.resources).toEqual([]);
    expect(data.totals).toEqual([]);
    const outcome = await scanProject(
      { scanData },
      {
        teamId: other.teamId,
        projectId: newId('project'),
        connectionIds: [connectionId],
        requiredTags,
        now: new Date(),
      },
    );
    expect(outcome).toMatchObject({ resourcesScanned: 0, results: [] });
  });

  it('refuses a window or a cap out of range', async () => {
    await expect(
      scanData.getScanData({ connectionIds: [connectionId], days: 401 }, team),
    ).rejects.toMatchObject({
      name: 'ValidationError',
    });
    await expect(
      scanData.getScanData({ connectionIds: [connectionId], maxResources: 10_001 }, team),
    ).rejects.toMatchObject({ name: 'ValidationError' });
  });

  it('returns the costliest resources first and says when it left some out', async () => {
    const data = await scanData.getScanData({ connectionIds: [connectionId], maxResources: 5 }, team);
    expect(data.truncated).toBe(true);
    expect(data.resources).toHaveLength(5);
    const costliest = [...byResource().values()]
      .map(sum)
      .sort((a, b) => b - a)
      .slice(0, 5);
    data.resources.forEach((resource, index) =>
      expect(resource.effectiveCost).toBeCloseTo(costliest[index]!, 9),
    );
  });
});

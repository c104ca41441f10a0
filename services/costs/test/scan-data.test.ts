import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { costs } from '@costgov/contracts';
import { newId } from '@costgov/ids';
import { createLogger } from '@costgov/log';
import { createRpcClient, type RpcClient } from '@costgov/rpc';
import { startService, type RunningService } from '@costgov/runtime';
import { freshDb, testBus } from '@costgov/testing';
import { costsModule } from '../src/module';

const logger = createLogger('test', 'silent');
const team = { teamId: newId('team') };

let service: RunningService;
let bus: Awaited<ReturnType<typeof testBus>>;
let connections: RpcClient<typeof costs.ConnectionsService>;
let costData: RpcClient<typeof costs.CostDataService>;
let scanData: RpcClient<typeof costs.ScanDataService>;

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
  scanData = createRpcClient(costs.ScanDataService, address, { deadlineMs: 60_000 });
}, 60_000);

afterAll(async () => {
  connections?.close();
  costData?.close();
  scanData?.close();
  await service?.stop();
  await bus?.close();
});

async function* parts(connectionId: string, body: string) {
  yield { part: { case: 'start' as const, value: { connectionId, contentEncoding: 'identity' } } };
  const bytes = Buffer.from(body);
  for (let offset = 0; offset < bytes.length; offset += 64 * 1024)
    yield { part: { case: 'chunk' as const, value: bytes.subarray(offset, offset + 64 * 1024) } };
}

/** One row per resource, each with `tagBytes` of tags; resource i costs i + 1. */
function focusFile(resources: number, tagBytes: number): string {
  const header =
    'BilledCost,EffectiveCost,BillingCurrency,BillingPeriodStart,BillingPeriodEnd,ChargePeriodStart,ChargePeriodEnd,ServiceName,ResourceId,Tags';
  const tags = (i: number) =>
    JSON.stringify({ owner: `team-${i}`, note: 'x'.repeat(tagBytes) }).replaceAll('"', '""');
  const lines = Array.from({ length: resources }, (_, i) =>
    [
      i + 1,
      i + 1,
      'USD',
      '2025-03-01T00:00:00Z',
      '2025-04-01T00:00:00Z',
      '2025-03-10T00:00:00Z',
      '2025-03-10T01:00:00Z',
      'EC2',
      `i-${i}`,
      `"${tags(i)}"`,
    ].join(','),
  );
  return `${header}\n${lines.join('\n')}\n`;
}

describe('ScanDataService.GetScanData', () => {
  it('keeps its answer under the gRPC message limit, the costliest resources first, and says it left some out', async () => {
    const connectionId = (await connections.createConnection({ name: 'wide', provider: 'aws' }, team)).id;
    // 6000 resources with 1 KB of tags each: about 6 MB of resources, more than one message carries.
    await costData.uploadCostData(parts(connectionId, focusFile(6000, 1000)), team);
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
    await costData.uploadCostData(parts(connectionId, focusFile(50, 10)), team);
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

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { costsModule } from '@costgov/costs';
import { costs } from '@costgov/contracts';
import { newId } from '@costgov/ids';
import { createLogger } from '@costgov/log';
import { createRpcClient, type RpcClient } from '@costgov/rpc';
import { startService, type RunningService } from '@costgov/runtime';
import { focusScenario, freshDb, testBus, usageBased } from '@costgov/testing';
import { scanDataOf, scanProject, type ScanProjectOutcome } from '../../src/rules/scan';
import type { ScanData } from '../../src/rules/types';

const { planted, scenarioCsv, scenarioRows } = focusScenario;
const logger = createLogger('test', 'silent');
const team = { teamId: newId('team') };
const perMonth = 30.44;

let service: RunningService;
let bus: Awaited<ReturnType<typeof testBus>>;
let connections: RpcClient<typeof costs.ConnectionsService>;
let costData: RpcClient<typeof costs.CostDataService>;
let scanData: RpcClient<typeof costs.ScanDataService>;
let connectionId: string;
let outcome: ScanProjectOutcome;
let data: ScanData;

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
  connectionId = (await connections.createConnection({ name: 'scenario', provider: 'aws' }, team)).id;
  await costData.uploadCostData(parts(connectionId, Buffer.from(scenarioCsv())), team);
  data = scanDataOf(await scanData.getScanData({ connectionIds: [connectionId] }, team));
  outcome = await scanProject(
    { scanData },
    {
      teamId: team.teamId,
      projectId: newId('project'),
      connectionIds: [connectionId],
      requiredTags: [],
      now: new Date(),
    },
  );
}, 60_000);

afterAll(async () => {
  connections?.close();
  costData?.close();
  scanData?.close();
  await service?.stop();
  await bus?.close();
});

const found = (ruleId: string, resourceId: string) =>
  outcome.results.find((result) => result.ruleId === ruleId && result.resourceId === resourceId);

/** Within 15% of the planted amount. */
const near = (actual: number | undefined, plantedAmount: number) => {
  expect(actual).toBeDefined();
  expect(Math.abs(actual! - plantedAmount) / plantedAmount).toBeLessThanOrEqual(0.15);
};

describe('a scan of a scenario file with planted waste and planted non-problems', () => {
  it('gets from costs the usage-based part of each day, the commitments and the span the data covers', () => {
    const rows = scenarioRows();
    const usage = new Map<string, number>();
    for (const row of rows) {
      const day = String(row.ChargePeriodStart).slice(0, 10);
      const counted = usageBased(
        row.ChargeCategory as string | undefined,
        row.ChargeFrequency as string | undefined,
      );
      usage.set(day, (usage.get(day) ?? 0) + (counted ? Number(row.EffectiveCost) : 0));
    }
    const perDay = new Map<string, number>();
    for (const row of data.daily) perDay.set(row.day, (perDay.get(row.day) ?? 0) + row.usageCost);
    expect([...perDay.keys()].sort()).toEqual([...usage.keys()].sort());
    for (const [day, cost] of usage) expect(perDay.get(day), day).toBeCloseTo(cost, 6);

    const commitmentRows = rows.filter((row) => row.CommitmentDiscountId === planted.savingsPlan.id);
    const costOf = (status: string) =>
      commitmentRows
        .filter((row) => row.CommitmentDiscountStatus === status)
        .reduce((sum, row) => sum + Number(row.EffectiveCost), 0);
    expect(data.commitments).toHaveLength(1);
    expect(data.commitments[0]!.usedCost).toBeCloseTo(costOf('Used'), 6);
    expect(data.commitments[0]!.unusedCost).toBeCloseTo(costOf('Unused'), 6);
    expect(data.dataStart).toBe('2024-08-01T00:00:00.000Z');
    expect(data.dataEnd).toBe('2024-10-01T00:00:00.000Z');
  });

  it('finds the unused share of the savings plan from its own Used and Unused rows', () => {
    const used = planted.covered.reduce((sum, { hourly }) => sum + hourly * 24 * planted.coveredRate, 0);
    const unused = planted.savingsPlan.perDay - used;
    const result = found('commitments-unused', planted.savingsPlan.id);
    near(result?.estimatedMonthlySavings, unused * perMonth);
    expect(result!.description).toContain(
      `${Math.round((unused / planted.savingsPlan.perDay) * 100)}% unused`,
    );
  });

  it('finds every idle address at its monthly cost', () => {
    for (const { id } of planted.idleAddresses)
      near(found('network-idle-public-ip', id)?.estimatedMonthlySavings, planted.idleHourly * 24 * perMonth);
  });

  it('prices previous-generation instances against the newer family in the data, no savings under the partly unused plan', () => {
    const newer = planted.covered.find(({ type }) => type.startsWith('c5'))!;
    for (const old of planted.covered.filter(({ type }) => type.startsWith('c4'))) {
      const monthlyCost = old.hourly * 24 * planted.coveredRate * perMonth;
      const result = found('compute-previous-generation', old.id);
      const share = 1 - newer.hourly / old.hourly;
      expect(result!.description).toContain(`its successor c5 costs ${Math.round(share * 100)}% less`);
      expect(result!.description).not.toContain('Estimate');
      // The plan covering them already goes partly unused: a cheaper family frees plan, not money.
      expect(result!.estimatedMonthlySavings).toBeUndefined();
      expect(result!.description).toContain(
        `frees commitment, not money (about ${Math.round(monthlyCost * share * 100) / 100}`,
      );
    }
  });

  it('schedules the always-on dev machines; the unused plan, not a new commitment, is their other way', () => {
    for (const { id, hourly } of planted.alwaysOn) {
      near(
        found('compute-nonprod-always-on', id)?.estimatedMonthlySavings,
        hourly * 24 * perMonth * (1 - 60 / 168),
      );
      // The plan leaves more unused a month than both machines cost on demand: no new commitment.
      const commit = found('commitments-steady-on-demand', id);
      expect(commit?.estimatedMonthlySavings).toBeUndefined();
      expect(commit!.recommendation).toContain('Use the existing commitment');
    }
  });

  it('finds the one real anomaly, on its day, in its service and its connection', () => {
    const day = new Date(Date.UTC(2024, 7, 1 + planted.anomaly.day)).toISOString().slice(0, 10);
    expect(found('spend-service-anomaly', `${connectionId}/AWS Lambda`)!.description).toContain(`On ${day}`);
    expect(found('spend-daily-anomaly', connectionId)!.description).toContain(`On ${day}`);
    expect(outcome.results.filter((r) => r.ruleId.endsWith('anomaly'))).toHaveLength(2);
  });

  it('flags none of the non-problems and nothing else', () => {
    const expected = [
      `commitments-unused ${planted.savingsPlan.id}`,
      ...planted.idleAddresses.map(({ id }) => `network-idle-public-ip ${id}`),
      ...planted.covered
        .filter(({ type }) => type.startsWith('c4'))
        .map(({ id }) => `compute-previous-generation ${id}`),
      ...planted.alwaysOn.flatMap(({ id }) => [
        `compute-nonprod-always-on ${id}`,
        `commitments-steady-on-demand ${id}`,
      ]),
      `spend-service-anomaly ${connectionId}/AWS Lambda`,
      `spend-daily-anomaly ${connectionId}`,
    ].sort();
    expect(outcome.results.map((r) => `${r.ruleId} ${r.resourceId}`).sort()).toEqual(expected);
    // The monthly fee, the purchase, the tax, the credit and the scheduled dev machine are in none of them.
    const text = JSON.stringify(outcome.results);
    for (const quiet of [planted.purchase.id, planted.scheduled.id, 'AWS Support', 'Tax', 'credit'])
      expect(text).not.toContain(quiet);
  });

  it('promises no resource more than its monthly cost, and states the days it projected from', () => {
    const rows = scenarioRows();
    for (const resource of data.resources) {
      const own = rows.filter((row) => row.ResourceId === resource.resourceId);
      const cost = own.reduce((sum, row) => sum + Number(row.EffectiveCost), 0);
      const start = Math.min(...own.map((row) => Date.parse(String(row.ChargePeriodStart))));
      const end = Math.max(...own.map((row) => Date.parse(String(row.ChargePeriodEnd))));
      const monthlyCost = (cost / Math.max(1, (end - start) / 86_400_000)) * perMonth;
      const promised = outcome.results
        .filter((result) => result.resourceId === resource.resourceId)
        .reduce((sum, result) => sum + (result.estimatedMonthlySavings ?? 0), 0);
      expect(promised, resource.resourceId).toBeLessThanOrEqual(monthlyCost + 0.01);
    }
    for (const result of outcome.results)
      if (result.estimatedMonthlySavings !== undefined)
        expect(result.projectedFromDays).toBeGreaterThanOrEqual(21);
  });
});

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newId } from '@costgov/ids';
import { focusScenario, usageBased } from '@costgov/testing';
import { allRules } from '../../src/rules/catalogue';
import { scanDataOf, scanProject, type ScanProjectOutcome } from '../../src/rules/scan';
import type { RuleContext, ScanData } from '../../src/rules/types';
import { startCostsHolding, type CostsHolding } from '../costs-fixture';

const { planted, scenarioCsv, scenarioRows } = focusScenario;
const team = { teamId: newId('team') };
const perMonth = 30.44;

let costsService: CostsHolding;
let connectionId: string;
let outcome: ScanProjectOutcome;
let data: ScanData;
let context: RuleContext;
const dayMs = 86_400_000;
/** The day (YYYY-MM-DD) `day` days after 1 August 2024. */
const dayOf = (day: number) => new Date(focusScenario.first + day * dayMs).toISOString().slice(0, 10);

beforeAll(async () => {
  costsService = await startCostsHolding(team, 'scenario', scenarioCsv());
  ({ connectionId } = costsService);
  const { scanData } = costsService.clients;
  data = scanDataOf(await scanData.getScanData({ connectionIds: [connectionId] }, team));
  outcome = await scanProject(
    { scanData },
    {
      teamId: team.teamId,
      projectId: newId('project'),
      connectionIds: [connectionId],
      requiredTags: planted.requiredTags,
      now: new Date(),
    },
  );
  context = { requiredTags: planted.requiredTags, now: new Date(), currency: 'USD', minDailyImpact: 50 };
}, 60_000);

afterAll(async () => {
  await costsService?.stop();
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
    // The tax and support rows of September span it to 1 October; the usage ends on 21 September.
    expect(data.dataStart).toBe('2024-08-01T00:00:00.000Z');
    expect(data.dataEnd).toBe('2024-10-01T00:00:00.000Z');
    expect(data.totals.map((totals) => totals.dataEnd)).toEqual([
      `${dayOf(focusScenario.days)}T00:00:00.000Z`,
    ]);
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
    const day = dayOf(planted.anomaly.day);
    expect(found('spend-service-anomaly', `${connectionId}/AWS Lambda`)!.description).toContain(`On ${day}`);
    expect(found('spend-daily-anomaly', connectionId)!.description).toContain(`On ${day}`);
    expect(outcome.results.filter((r) => r.ruleId.endsWith('anomaly'))).toHaveLength(2);
  });

  it('finds the untagged and mis-tagged resources, keys compared whatever their case', () => {
    const { untagged, misKeyed, misValued } = planted.volumes;
    expect(found('tags-missing-required', untagged.id)!.description).toContain(
      `has no ${planted.requiredTags.join(', ')} tags`,
    );
    // `Env` is not the required Environment key; its Application (written `application`) is there.
    expect(found('tags-missing-required', misKeyed.id)!.description).toContain('has no Environment tag.');
    expect(found('tags-inconsistent-keys', 'tag-key:environment')!.description).toContain(
      "'Env' (1 resource)",
    );
    // `prod` beside `production` under one key (written `environment` and `Environment`).
    const values = found('tags-inconsistent-values', 'tag-value:environment=production')!;
    expect(values.description).toContain(`'${misValued.tags.environment}' (1 resource)`);
  });

  it("states each rule's own savings, before ranking and capping, within 15% of the planted amount", () => {
    // What each planted problem would save, from the planted facts; planted problems with no saving
    // (a new commitment the unused plan makes needless, modernising usage of the partly unused plan)
    // and every non-problem must carry none.
    const used = planted.covered.reduce((sum, { hourly }) => sum + hourly * 24 * planted.coveredRate, 0);
    const expected = new Map<string, number>([
      [`commitments-unused ${planted.savingsPlan.id}`, (planted.savingsPlan.perDay - used) * perMonth],
      ...planted.idleAddresses.map(
        ({ id }) => [`network-idle-public-ip ${id}`, planted.idleHourly * 24 * perMonth] as [string, number],
      ),
      ...planted.alwaysOn.map(
        ({ id, hourly }) =>
          [`compute-nonprod-always-on ${id}`, hourly * 24 * perMonth * (1 - 60 / 168)] as [string, number],
      ),
    ]);
    const raw = allRules.flatMap((rule) => rule.evaluate(data, context));
    const withSavings = raw.filter((result) => result.estimatedMonthlySavings !== undefined);
    expect(withSavings.map((r) => `${r.ruleId} ${r.resourceId}`).sort()).toEqual([...expected.keys()].sort());
    for (const result of withSavings)
      near(result.estimatedMonthlySavings, expected.get(`${result.ruleId} ${result.resourceId}`)!);
    // Ranking and capping changed none of them: no rule overstated what its resource costs.
    for (const result of withSavings)
      expect(found(result.ruleId, result.resourceId)!.estimatedMonthlySavings).toBe(
        result.estimatedMonthlySavings,
      );
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
      `tags-missing-required ${planted.volumes.untagged.id}`,
      `tags-missing-required ${planted.volumes.misKeyed.id}`,
      'tags-inconsistent-keys tag-key:environment',
      'tags-inconsistent-values tag-value:environment=production',
    ].sort();
    expect(outcome.results.map((r) => `${r.ruleId} ${r.resourceId}`).sort()).toEqual(expected);
    // The monthly fee, the purchase, the tax, the credit, the scheduled dev machine and the volume with
    // capitalised keys are in none of them.
    const text = JSON.stringify(outcome.results);
    for (const quiet of [
      planted.purchase.id,
      planted.scheduled.id,
      planted.volumes.capitalised.id,
      'AWS Support',
      'Tax',
      'credit',
      'Last billed',
    ])
      expect(text).not.toContain(quiet);
  });

  it('promises no resource more than its monthly cost, and states the days it projected from', () => {
    const rows = scenarioRows();
    const spanOf = (id: string) => {
      const own = rows.filter((row) => row.ResourceId === id);
      const start = Math.min(...own.map((row) => Date.parse(String(row.ChargePeriodStart))));
      const end = Math.max(...own.map((row) => Date.parse(String(row.ChargePeriodEnd))));
      return { own, days: Math.max(1, (end - start) / dayMs) };
    };
    for (const resource of data.resources) {
      const { own, days } = spanOf(resource.resourceId);
      const cost = own.reduce((sum, row) => sum + Number(row.EffectiveCost), 0);
      const monthlyCost = (cost / days) * perMonth;
      const promised = outcome.results
        .filter((result) => result.resourceId === resource.resourceId)
        .reduce((sum, result) => sum + (result.estimatedMonthlySavings ?? 0), 0);
      expect(promised, resource.resourceId).toBeLessThanOrEqual(monthlyCost + 0.01);
    }
    for (const result of outcome.results)
      if (result.estimatedMonthlySavings !== undefined)
        expect(result.projectedFromDays, result.resourceId).toBe(Math.round(spanOf(result.resourceId).days));
  });
});

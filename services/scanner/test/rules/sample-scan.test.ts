import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newId } from '@costgov/ids';
import { focusSample } from '@costgov/testing';
import { allRules } from '../../src/rules/catalogue';
import { readAllPages, scanDataOf, scanProject } from '../../src/rules/scan';
import { startCostsHolding, type CostsHolding } from '../costs-fixture';

const { byResource, costliestRow, expectedFindings, monthlyCost, rows, sample, sum } = focusSample;

const team = { teamId: newId('team') };
const requiredTags = ['environment', 'application'];

let costsService: CostsHolding;
let scanData: CostsHolding['clients']['scanData'];
let connectionId: string;

beforeAll(async () => {
  costsService = await startCostsHolding(team, 'sample', sample);
  ({ connectionId } = costsService);
  ({ scanData } = costsService.clients);
}, 60_000);

afterAll(async () => {
  await costsService?.stop();
});

describe('a scan over the FOCUS sample (data/focus/focus_sample_1000.csv)', () => {
  it('costs sums the rows per resource as the file does', async () => {
    const answer = await scanData.getScanData({ connectionIds: [connectionId] }, team);
    expect(answer.hasMore).toBe(false);
    const data = scanDataOf(answer);
    const resources = byResource();
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
      expect(resource.chargeDescription, resource.resourceId).toBe(costliestRow(list).description);
      const surcharge = list.filter((row) => /extended support/i.test(row.description));
      expect(resource.extendedSupportCost, resource.resourceId).toBeCloseTo(sum(surcharge), 9);
    }
    const [totals] = data.totals;
    expect(totals!.effectiveCost).toBeCloseTo(sum(rows), 9);
    // Tax, credit, purchase and adjustment charges apart; untagged and unattributed among the rest.
    const byNature = (row: (typeof rows)[number]) =>
      ['Tax', 'Credit', 'Purchase', 'Adjustment'].includes(row.category);
    expect(totals!.untaggableCategoryCost).toBeCloseTo(sum(rows.filter(byNature)), 9);
    expect(totals!.untaggedCost).toBeCloseTo(
      sum(rows.filter((row) => !byNature(row) && row.resourceId && Object.keys(row.tags).length === 0)),
      9,
    );
    expect(totals!.unattributedCost).toBeCloseTo(
      sum(rows.filter((row) => !byNature(row) && !row.resourceId)),
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
      expectedFindings(connectionId, requiredTags),
    );
    for (const result of outcome.results) {
      expect(result.currency).toBe('USD');
      expect(result.title && result.description && result.recommendation).toBeTruthy();
    }
    // No resource's findings promise more than it costs a month (its rows per covered day, times 30.44).
    for (const [id, list] of byResource()) {
      const promised = outcome.results
        .filter((result) => result.resourceId === id)
        .reduce((total, result) => total + (result.estimatedMonthlySavings ?? 0), 0);
      if (promised > 0) expect(promised, id).toBeLessThanOrEqual(monthlyCost(list) + 0.01);
    }
    // Nor does any rule on its own, before ranking and capping (the cap cannot hide an overstated rule).
    const data = scanDataOf(await scanData.getScanData({ connectionIds: [connectionId] }, team));
    const context = { requiredTags, now: new Date(), currency: 'USD', minDailyImpact: 50 };
    const raw = allRules.flatMap((rule) => rule.evaluate(data, context));
    for (const [id, list] of byResource())
      for (const result of raw.filter((found) => found.resourceId === id && found.estimatedMonthlySavings))
        expect(result.estimatedMonthlySavings, `${result.ruleId} ${id}`).toBeLessThanOrEqual(
          monthlyCost(list) + 0.01,
        );
    // The sample holds an hour or so of each resource: its figures say they rest on a day at most.
    for (const result of outcome.results)
      if (result.estimatedMonthlySavings !== undefined) expect(result.projectedFromDays).toBe(1);
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

  it('pages every resource exactly once, and the scan reads every page', async () => {
    const ids: string[] = [];
    let page = await scanData.getScanData({ connectionIds: [connectionId], maxResources: 5 }, team);
    const windowEnd = page.windowEnd;
    for (;;) {
      expect(page.resources.length).toBeLessThanOrEqual(5);
      ids.push(...page.resources.map((resource) => resource.resourceId));
      if (!page.hasMore) break;
      const last = page.resources.at(-1)!;
      page = await scanData.getScanData(
        {
          connectionIds: [connectionId],
          maxResources: 5,
          until: windowEnd,
          afterConnectionId: last.connectionId,
          afterResourceId: last.resourceId,
        },
        team,
      );
      // Only the first page carries the aggregates.
      expect(page.totals).toEqual([]);
    }
    expect(new Set(ids).size).toBe(ids.length);
    expect(new Set(ids)).toEqual(new Set(byResource().keys()));
    // The scan reads them all, costliest first.
    const all = await readAllPages({ scanData }, { teamId: team.teamId, connectionIds: [connectionId] });
    expect(all.resources.map((resource) => resource.effectiveCost)).toEqual(
      [...byResource().values()]
        .map(sum)
        .sort((a, b) => b - a)
        .map((cost) => expect.closeTo(cost, 9)),
    );
  });
});

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newId } from '@costgov/ids';
import { focusScenario } from '@costgov/testing';
import type { PendingJudgements } from '../../src/rules/engine';
import { allRules } from '../../src/rules/catalogue';
import { rankSavings } from '../../src/rules/rank';
import { readAllPages, rulesRunner, scanDataOf } from '../../src/rules/scan';
import type { RuleResult } from '../../src/rules/types';
import { createHolding, startCostsHolding, type CostsHolding } from '../costs-fixture';

const { planted, scenarioCsv, scenarioRows } = focusScenario;
const team = { teamId: newId('team') };
const now = new Date();

let costsService: CostsHolding;
let connectionId: string;
/** A second connection: the scenario without its Unused commitment rows, its resources renamed. */
let plainConnectionId: string;

/**
 * The scenario's rows without the savings plan's Unused part, every resource id prefixed: steady
 * on-demand machines in a connection whose commitments leave nothing unused.
 */
function withoutUnused(): string {
  const rows = scenarioRows()
    .filter((row) => row.CommitmentDiscountStatus !== 'Unused')
    .map((row) => (row.ResourceId ? { ...row, ResourceId: `plain-${row.ResourceId}` } : row));
  const columns = [...new Set(rows.flatMap((row) => Object.keys(row)))];
  const quote = (value: unknown) => {
    if (value === undefined || value === '') return '';
    const text = String(value);
    return /[",\n]/.test(text) ? `"${text.replaceAll('"', '""')}"` : text;
  };
  const lines = rows.map((row) => columns.map((column) => quote(row[column as keyof typeof row])).join(','));
  return `${[columns.join(','), ...lines].join('\n')}\n`;
}
let scanData: CostsHolding['clients']['scanData'];

beforeAll(async () => {
  costsService = await startCostsHolding(team, 'scenario', scenarioCsv());
  ({ connectionId } = costsService);
  ({ scanData } = costsService.clients);
  plainConnectionId = await createHolding(costsService.clients, team, 'plain', withoutUnused());
}, 60_000);

afterAll(async () => {
  await costsService?.stop();
});

/** A finding as a comparable line: every field, so that a text or a figure that differs shows. */
const lines = (results: RuleResult[]) => results.map((result) => JSON.stringify(result)).sort();

/** The scan data client, counting calls and how many run at once. */
function counted() {
  const counts = { calls: 0, running: 0, mostAtOnce: 0 };
  const client = {
    getScanData: async (...args: Parameters<typeof scanData.getScanData>) => {
      counts.calls++;
      counts.running++;
      counts.mostAtOnce = Math.max(counts.mostAtOnce, counts.running);
      try {
        return await scanData.getScanData(...args);
      } finally {
        counts.running--;
      }
    },
  };
  return { client, counts };
}

const settings = async () => ({ requiredTags: planted.requiredTags, minDailyImpact: 50 });
const work = () => ({
  scanId: 'scn_a',
  teamId: team.teamId,
  projectId: newId('project'),
  connectionIds: [connectionId, plainConnectionId],
});

describe('a scan split into shards', () => {
  it('finds exactly what one pass over all the data finds, whatever the number of shards', async () => {
    // Today's engine: every rule over every resource at once, then weighed per resource.
    const whole = scanDataOf(
      await readAllPages({ scanData }, { teamId: team.teamId, connectionIds: work().connectionIds }),
    );
    const context = { requiredTags: planted.requiredTags, now, currency: 'USD', minDailyImpact: 50 };
    const expected = lines(
      rankSavings(
        allRules.flatMap((rule) => rule.evaluate(whole, context)),
        whole,
        now,
      ),
    );
    // The scenario plants what needs the whole scan: an old instance priced against current ones, an
    // unused savings plan shared out over steady usage.
    expect(expected.some((line) => line.includes('commitments-steady-on-demand'))).toBe(true);
    // And steady machines in a connection with nothing unused, judged in their shard.
    expect(
      expected.some((line) => line.includes('commitments-steady-on-demand') && line.includes('plain-')),
    ).toBe(true);
    expect(expected.some((line) => line.includes('compute-previous-generation'))).toBe(true);
    expect(expected.some((line) => line.includes('commitments-unused'))).toBe(true);
    const allIds = whole.resources.map((resource) => resource.resourceId).sort();
    expect(allIds.length).toBeGreaterThan(10);

    let splitPeers = false;
    for (const count of [1, 2, 3, 7]) {
      const { client, counts } = counted();
      // Three resources a page: several pages per shard.
      const runner = rulesRunner({ scanData: client }, settings, { pageSize: 3 });
      // At most 8 shards: the bounds come with the aggregates, from a split of 64.
      const planned = await runner.plan(
        work(),
        now,
        (resources) => {
          expect(resources).toBe(allIds.length);
          return count;
        },
        8,
      );
      expect(planned.resources).toBe(allIds.length);
      // Ranges of resource ids from costs, as many as asked for, each after the one before.
      expect(planned.shards.map((shard) => [shard.index, shard.count])).toEqual(
        [...Array(count).keys()].map((index) => [index, count]),
      );
      for (const [index, shard] of planned.shards.entries())
        expect(shard.from).toBe(index === 0 ? undefined : planned.shards[index - 1]!.to);
      // The plan's context (every aggregate of the window, read once) goes to every shard and the merge,
      // as the worker hands it.
      expect(planned.context).toBeDefined();
      const scan = { ...work(), windowEnd: planned.windowEnd, now, context: planned.context };
      const results: RuleResult[] = [];
      const ids: string[] = [];
      const pending: PendingJudgements[] = [];
      let scanned = 0;
      const shardOf = new Map<string, number>();
      for (const shard of planned.shards) {
        const { index } = shard;
        const before = counts.calls;
        let reported = 0;
        const outcome = await runner.runShard(scan, shard, (progress) => {
          expect(progress).toBeGreaterThanOrEqual(reported);
          reported = progress;
        });
        // One page asked at a time: the next is asked for once this one arrived, while it is judged.
        expect(counts.mostAtOnce).toBe(1);
        expect(counts.calls - before).toBeGreaterThanOrEqual(Math.ceil(outcome.resourceIds.length / 3));
        expect(reported).toBe(outcome.resourcesScanned);
        results.push(...outcome.results);
        ids.push(...outcome.resourceIds);
        for (const id of outcome.resourceIds) shardOf.set(id, index);
        scanned += outcome.resourcesScanned;
        if (outcome.pending) pending.push(outcome.pending);
      }
      // The merge has resources to judge (old instances, commitments) and every shard's summary.
      const pendingIds = pending.flatMap((part) => part.resources.map((resource) => resource.resourceId));
      expect(pendingIds.length).toBeGreaterThan(0);
      // The plain connection's steady machines were judged in their shards, not left to the merge.
      const plainSteady = results.filter(
        (result) =>
          result.ruleId === 'commitments-steady-on-demand' && result.resourceId.startsWith('plain-'),
      );
      expect(plainSteady.length).toBeGreaterThan(0);
      for (const result of plainSteady) expect(pendingIds).not.toContain(result.resourceId);
      // Every resource in exactly one shard: none lost, none twice.
      expect(ids.sort()).toEqual(allIds);
      expect(scanned).toBe(allIds.length);
      const beforeMerge = counts.calls;
      const merged = [...results, ...(await runner.runProjectRules(scan, pending))];
      expect(lines(merged), `${count} shards`).toEqual(expected);
      // The merge judged on the plan's aggregates: it read nothing more from costs.
      expect(counts.calls).toBe(beforeMerge);
      // A merge without them (a plan stored by an earlier version) reads them: the same findings.
      const unplanned = { ...scan, context: undefined };
      expect(lines([...results, ...(await runner.runProjectRules(unplanned, pending))])).toEqual(expected);
      expect(counts.calls).toBeGreaterThan(beforeMerge);
      // Nor with the light aggregates alone, as that version stored them for its shards.
      const lightOnly = { aggregates: (planned.context as { aggregates: unknown }).aggregates };
      const beforeOld = counts.calls;
      expect(
        lines([...results, ...(await runner.runProjectRules({ ...scan, context: lightOnly }, pending))]),
      ).toEqual(expected);
      expect(counts.calls).toBe(beforeOld + 1);
      // No finding twice.
      expect(new Set(merged.map((r) => `${r.ruleId} ${r.resourceId}`)).size).toBe(merged.length);
      // A merge handed no pending judgements reads the data again to find them: the same findings.
      expect(lines([...results, ...(await runner.runProjectRules(scan))])).toEqual(expected);
      const oldIds = planted.covered.filter((c) => c.type.startsWith('c4')).map((c) => c.id);
      const newIds = planted.covered.filter((c) => c.type.startsWith('c5')).map((c) => c.id);
      if (oldIds.some((old) => newIds.some((id) => shardOf.get(id) !== shardOf.get(old)))) splitPeers = true;
    }
    // Some split put an old instance and its current-generation peers in different shards.
    expect(splitPeers).toBe(true);
  }, 60_000);

  it('rejects a shard whose next page fails while the one before is judged, and leaves nothing unhandled', async () => {
    const unhandled: unknown[] = [];
    const onUnhandled = (reason: unknown) => unhandled.push(reason);
    process.on('unhandledRejection', onUnhandled);
    try {
      let calls = 0;
      const failing = {
        getScanData: async (...args: Parameters<typeof scanData.getScanData>) => {
          calls++;
          // The plan's aggregates, then pages: the second page fails (costs went away mid-shard).
          if (calls === 3) throw new Error('costs is unavailable');
          return scanData.getScanData(...args);
        },
      };
      const runner = rulesRunner({ scanData: failing }, settings, { pageSize: 3 });
      const planned = await runner.plan(work(), now, () => 1);
      const scan = { ...work(), windowEnd: planned.windowEnd, now, context: planned.context };
      await expect(runner.runShard(scan, planned.shards[0]!, () => {})).rejects.toThrow(
        'costs is unavailable',
      );
      // The page after the failed one is never asked for.
      expect(calls).toBe(3);
      // And a judge that fails with the next page in flight (here reading the team's settings on the first
      // page, a scan planned without aggregates): that page's later failure is not left unhandled.
      let asked = 0;
      const slowFailing = {
        getScanData: async (...args: Parameters<typeof scanData.getScanData>) => {
          asked++;
          if (asked === 2) {
            await new Promise((resolve) => setTimeout(resolve, 50));
            throw new Error('late failure');
          }
          return scanData.getScanData(...args);
        },
      };
      const throwing = rulesRunner(
        { scanData: slowFailing },
        async () => ({
          get requiredTags(): string[] {
            throw new Error('settings unreadable');
          },
        }),
        { pageSize: 3 },
      );
      await expect(
        throwing.runShard({ ...scan, context: undefined }, planned.shards[0]!, () => {}),
      ).rejects.toThrow('settings unreadable');
      expect(asked).toBe(2); // the second page was asked for before the first was judged
      await new Promise((resolve) => setTimeout(resolve, 100));
      expect(unhandled).toEqual([]);
    } finally {
      process.off('unhandledRejection', onUnhandled);
    }
  });

  it("refuses pending judgements that are not the engine's", async () => {
    const runner = rulesRunner({ scanData }, settings);
    const planned = await runner.plan(work(), now, () => 1);
    await expect(
      runner.runProjectRules({ ...work(), windowEnd: planned.windowEnd, now }, [{ resources: 'x' }]),
    ).rejects.toThrow(/pending judgements/);
  });
});

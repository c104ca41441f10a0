import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { create } from '@bufbuild/protobuf';
import { createOutbox } from '@costgov/bus';
import { identity, scanner } from '@costgov/contracts';
import type { Db } from '@costgov/db';
import { BadRequestError, UnavailableError, ValidationError } from '@costgov/errors';
import { newId } from '@costgov/ids';
import { focusFile, startServiceUnderTest, type ServiceUnderTest } from '@costgov/testing';
import { recordFindings } from '../src/findings/record';
import { scannerModule } from '../src/module';
import { runRulesOverRpc, scanRunnerOverRpc } from '../src/scans/rules-over-rpc';
import { shardCount } from '../src/scans/shards';
import { startCostsHolding, type CostsHolding } from './costs-fixture';

// More resources than one gRPC message carries: 6000 with 1 KB of tags each (about 7 MB).
const count = 6000;
const ids = Array.from({ length: count }, (_, i) => `i-${i}`);
const team = { teamId: newId('team') };

let costsService: CostsHolding;
let findingsService: ServiceUnderTest<{ findings: typeof scanner.FindingsService }>;
let scannerDb: Db;
let scanData: CostsHolding['clients']['scanData'];
let connectionId: string;

beforeAll(async () => {
  // Resource i costs i + 1 and lacks the required `environment` tag.
  const file = focusFile(
    ids.map((_, i) => ({ cost: i + 1, tags: { owner: `team-${i}`, note: 'x'.repeat(1000) } })),
    { month: '2025-03', chargeDay: () => new Date('2025-03-10T00:00:00Z') },
  );
  costsService = await startCostsHolding(team, 'wide', file, { scanData: { deadlineMs: 60_000 } });
  ({ connectionId } = costsService);
  ({ scanData } = costsService.clients);
  findingsService = await startServiceUnderTest(scannerModule(), {
    clients: { findings: scanner.FindingsService },
  });
  scannerDb = findingsService.db;
}, 120_000);

afterAll(async () => {
  await costsService?.stop();
  await findingsService?.stop();
});

const identityClient = {
  getTeamSettings: async () =>
    create(identity.TeamSettingsSchema, { teamId: team.teamId, requiredTags: ['environment'] }),
};
const work = {
  teamId: team.teamId,
  projectId: newId('project'),
  scanId: 'scn_a',
  connectionIds: [] as string[],
};
const now = () => new Date('2025-04-01T00:00:00Z');

describe('a scan over more resources than one message carries', () => {
  it('reads every page and judges every resource, those beyond the old cut and on later pages too', async () => {
    let calls = 0;
    const counting = {
      getScanData: (...args: Parameters<typeof scanData.getScanData>) => {
        calls++;
        return scanData.getScanData(...args);
      },
    };
    const rules = runRulesOverRpc({ scanData: counting, identityClient, now });
    const outcome = await rules({ ...work, connectionIds: [connectionId] }, () => undefined);
    expect(calls).toBeGreaterThan(1);
    expect(outcome.resourcesScanned).toBe(count);
    expect([...(outcome.resourceIds ?? [])].sort()).toEqual([...ids].sort());
    const flagged = outcome.results
      .filter((result) => result.ruleId === 'tags-missing-required')
      .map((result) => result.resourceId);
    expect(flagged.sort()).toEqual([...ids].sort());
    // i-0 (the cheapest; a costliest-first cut of one message left out about the cheapest 60 %) and
    // i-999 (cheap, and in the last page in key order) are judged.
    expect(flagged).toContain('i-0');
    expect(flagged).toContain('i-999');

    // Recorded twice: the second scan resolves nothing, the finding on i-999 stays open.
    const projectId = work.projectId;
    const outbox = createOutbox({ source: 'scanner' });
    const record = (scanId: string, results: typeof outcome.results) =>
      scannerDb.transaction((tx) =>
        recordFindings(
          tx,
          { outbox, newId, now: () => new Date() },
          { teamId: team.teamId, projectId, scanId, results, resourceIds: outcome.resourceIds },
        ),
      );
    await record(newId('scan'), outcome.results);
    const again = await rules({ ...work, connectionIds: [connectionId] }, () => undefined);
    await record(newId('scan'), again.results);
    const { rows } = await scannerDb.query<{ status: string; n: number }>(
      `SELECT status, count(*)::int AS n FROM findings WHERE team_id = $1 AND project_id = $2
         AND rule_id = 'tags-missing-required' GROUP BY status`,
      [team.teamId, projectId],
    );
    expect(rows).toEqual([{ status: 'open', n: count }]);
  }, 120_000);

  it('fails, to be retried, when a later page cannot be read', async () => {
    let calls = 0;
    const failing = {
      getScanData: async (...args: Parameters<typeof scanData.getScanData>) => {
        if (++calls > 1) throw new UnavailableError('costs is down');
        return scanData.getScanData(...args);
      },
    };
    const rules = runRulesOverRpc({ scanData: failing, identityClient, now });
    await expect(rules({ ...work, connectionIds: [connectionId] }, () => undefined)).rejects.toBeInstanceOf(
      UnavailableError,
    );
  }, 60_000);

  it('plans a split scan in one call to costs: the aggregates with a fine split, coarsened', async () => {
    const asked: Array<{ parts: number; splitInto: number }> = [];
    type Costs = 'current' | 'version before' | 'bounds too large';
    const recording = (costsIs: Costs) => ({
      getScanData: async (...args: Parameters<typeof scanData.getScanData>) => {
        const [request] = args;
        asked.push({ parts: request.parts ?? 0, splitInto: request.splitInto ?? 0 });
        const splitWithAggregates = request.parts === 2 && (request.splitInto ?? 0) > 1;
        // As the version before answers: the split only with COUNT.
        if (costsIs === 'version before' && splitWithAggregates)
          throw new ValidationError([{ field: 'split_into', message: 'needs parts COUNT' }]);
        // As costs answers when the bounds would take the answer past one message.
        if (costsIs === 'bounds too large' && splitWithAggregates)
          throw new BadRequestError('the scan daily series, tag usage and shard bounds outgrow one message');
        return scanData.getScanData(...args);
      },
    });
    // 6000 resources, 1000 a shard: 6 shards.
    const shardsFor = (resources: number) => shardCount(resources, { perShard: 1000, maxShards: 8 });
    const planWith = (costsIs: Costs, mostShards = 8) => {
      asked.length = 0;
      return scanRunnerOverRpc({ scanData: recording(costsIs), identityClient }).plan(
        { ...work, connectionIds: [connectionId] },
        now(),
        shardsFor,
        mostShards,
      );
    };
    // At most 8 shards: a fine split of 64.
    const planned = await planWith('current');
    expect(asked).toEqual([{ parts: 2, splitInto: 64 }]);
    expect(planned.resources).toBe(count);
    expect(planned.shards).toHaveLength(6);
    // What the scan stores for its shards and merge: the aggregates, not the fine split's bounds.
    expect(planned.context).toMatchObject({ aggregates: { shardBounds: [] } });
    // The shards hold every id once, each within a fine shard (6000 / 64: half of one at either end) of an
    // equal share.
    const byteOrder = [...ids].sort((a, b) => Buffer.compare(Buffer.from(a), Buffer.from(b)));
    const sizes = planned.shards.map(
      (shard) =>
        byteOrder.filter(
          (id) =>
            (!shard.from || Buffer.compare(Buffer.from(id), Buffer.from(shard.from)) >= 0) &&
            (!shard.to || Buffer.compare(Buffer.from(id), Buffer.from(shard.to)) < 0),
        ).length,
    );
    expect(sizes.reduce((a, b) => a + b, 0)).toBe(count);
    for (const size of sizes)
      expect(Math.abs(size - count / 6)).toBeLessThanOrEqual(Math.ceil(count / 64) + 1);

    // A costs of the version before refuses the split with the aggregates: asked again without it, then
    // split by COUNT, exactly.
    const fallback = await planWith('version before');
    expect(asked).toEqual([
      { parts: 2, splitInto: 64 },
      { parts: 2, splitInto: 0 },
      { parts: 1, splitInto: 6 },
    ]);
    expect(fallback.resources).toBe(count);
    const exact = fallback.shards.map(({ from, to }) => [from, to]);
    expect(exact).toHaveLength(6);
    // Bounds too long for one answer with the aggregates: the same way round.
    expect((await planWith('bounds too large')).shards.map(({ from, to }) => [from, to])).toEqual(exact);
    expect(asked).toHaveLength(3);
    // At most 6 shards: a fine split of 48, which 6 divides: COUNT's bounds exactly, in one call.
    expect((await planWith('current', 6)).shards.map(({ from, to }) => [from, to])).toEqual(exact);
    expect(asked).toEqual([{ parts: 2, splitInto: 48 }]);
  }, 60_000);
});

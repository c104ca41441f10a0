import { timestampDate, timestampFromDate, type Timestamp } from '@bufbuild/protobuf/wkt';
import { costs } from '@costgov/contracts';
import type { RpcClient } from '@costgov/rpc';
import { BadRequestError, ValidationError } from '@costgov/errors';
import {
  wholeScan,
  type PlannedScan,
  type ScanRunner,
  type ShardOutcome,
  type ShardSpec,
} from '../scans/run-rules';
import { coarseBounds, fineShards, rangeShards } from '../scans/shards';
import { emptyPending, finishScan, pendingOf, shardJudge, type PendingJudgements } from './engine';
import { defaultMinDailyImpact, type RuleResult, type ScanData } from './types';

export interface ScanDeps {
  /** Costs' ScanDataService (COSTS_ADDR). */
  scanData: Pick<RpcClient<typeof costs.ScanDataService>, 'getScanData'>;
}

export interface ScanProjectInput {
  teamId: string;
  projectId: string;
  connectionIds: string[];
  /** The team's required tag keys (identity GetTeamSettings.required_tags). */
  requiredTags: string[];
  now: Date;
  /**
   * The team's minimum daily impact for anomalies in the data's currency, or how to find it once the
   * data's currency is known (`defaultMinDailyImpact` when unset).
   */
  minDailyImpact?: number | ((currency: string) => number | Promise<number>);
  /** End of the window; by default the end of the connections' latest charge period. */
  until?: Date;
}

export interface ScanProjectOutcome {
  resourcesScanned: number;
  results: RuleResult[];
  /** Every resource the rules judged (all pages), for recording which findings a scan dealt with. */
  resourceIds: string[];
}

/** The proto answer as the rules read it: times as ISO timestamps, an absent cost as null. */
export function scanDataOf(response: costs.GetScanDataResponse): ScanData {
  const iso = (at: Timestamp | undefined) => (at ? timestampDate(at).toISOString() : '');
  return {
    ...response,
    windowStart: iso(response.windowStart),
    windowEnd: iso(response.windowEnd),
    resources: response.resources.map((resource) => ({
      ...resource,
      listCost: resource.listCost ?? null,
      contractedCost: resource.contractedCost ?? null,
      firstSeen: iso(resource.firstSeen),
      lastSeen: iso(resource.lastSeen),
    })),
    totals: response.totals.map((totals) => ({
      ...totals,
      records: Number(totals.records),
      unusedCommitmentRecords: Number(totals.unusedCommitmentRecords),
      dataEnd: iso(totals.dataEnd),
    })),
    commitments: response.commitments.map((commitment) => ({
      ...commitment,
      firstSeen: iso(commitment.firstSeen),
      lastSeen: iso(commitment.lastSeen),
    })),
    dataStart: iso(response.dataStart),
    dataEnd: iso(response.dataEnd),
  };
}

/**
 * What the plan hands every shard and the merge (stored with the scan as JSON): costs' aggregates of the
 * window, read once. `projectWide`: they hold the daily series and tag usage too, which the merge reads
 * (a plan stored by an earlier version held the shards' light aggregates only).
 */
interface PlanContext {
  aggregates: ScanData;
  projectWide?: boolean;
}

/** The plan's aggregates when `context` is one of this runner's (else none: the shard reads its own). */
function planContextOf(context: unknown): ScanData | undefined {
  if (!context || typeof context !== 'object' || !('aggregates' in context)) return undefined;
  const aggregates = (context as PlanContext).aggregates;
  const valid =
    aggregates &&
    typeof aggregates === 'object' &&
    typeof aggregates.currency === 'string' &&
    Array.isArray(aggregates.totals) &&
    Array.isArray(aggregates.commitments) &&
    typeof aggregates.dataEnd === 'string';
  return valid ? aggregates : undefined;
}

/** The plan's aggregates when they hold the project-wide ones too (else none: the merge reads its own). */
function projectWideOf(context: unknown): ScanData | undefined {
  const aggregates = planContextOf(context);
  const full =
    aggregates &&
    (context as PlanContext).projectWide === true &&
    Array.isArray(aggregates.daily) &&
    Array.isArray(aggregates.tagUsage);
  return full ? aggregates : undefined;
}

/** The team's settings a scan's rules read (identity GetTeamSettings), fetched once per shard or merge. */
export interface ScanSettings {
  requiredTags: string[];
  /** As ScanProjectInput.minDailyImpact. */
  minDailyImpact?: number | ((currency: string) => number | Promise<number>);
}

/** A ScanRunner whose shards say what they leave to the merge (rules/engine.ts). */
export interface RulesRunner extends ScanRunner {
  runShard(
    scan: PlannedScan,
    shard: ShardSpec,
    progress: (resourcesScanned: number) => void,
  ): Promise<ShardOutcome & { pending?: PendingJudgements }>;
  /**
   * The project-wide rules and the shards' pending judgements. Without `pending` (a caller that did not
   * keep the shards' pending judgements) every page is read again to find them: the same findings,
   * one more pass over the data.
   */
  runProjectRules(scan: PlannedScan, pending?: readonly unknown[]): Promise<RuleResult[]>;
}

/** Most resources a page asks for (costs' default). */
const defaultPageSize = 5000;

/**
 * The rule catalogue over costs' scan data, split as rules/engine.ts describes: `plan` counts the
 * resources (COUNT) and, for more than one shard, has costs cut their ids into ranges of about equal size
 * (COUNT with split_into), `runShard` reads the shard's pages one at a time (RESOURCES, its range) and
 * judges each before asking for the next, `runProjectRules` reads the aggregates (AGGREGATES) and
 * finishes the scan. Every request names the planned window's end, so every shard reads the same window.
 * A page that cannot be read rejects (costs down: UnavailableError, which the worker retries).
 */
export function rulesRunner(
  deps: ScanDeps,
  settingsOf: (teamId: string) => Promise<ScanSettings>,
  { pageSize = defaultPageSize }: { pageSize?: number } = {},
): RulesRunner {
  /**
   * The rules' context. The minimum daily impact (exchange rates read for it, or a warning logged) only
   * for the merge: per-resource rules do not read it.
   */
  const contextOf = async (
    currency: string,
    scan: PlannedScan,
    settings: ScanSettings,
    withImpact: boolean,
  ) => ({
    requiredTags: settings.requiredTags,
    now: scan.now,
    currency,
    minDailyImpact:
      !withImpact || settings.minDailyImpact === undefined
        ? defaultMinDailyImpact
        : typeof settings.minDailyImpact === 'function'
          ? await settings.minDailyImpact(currency)
          : settings.minDailyImpact,
  });

  /** Every page of one shard, judged page by page; `onPage` sees the count so far. */
  async function judgeShard(
    scan: PlannedScan,
    shard: ShardSpec,
    settings: ScanSettings,
    onPage: (judged: number) => void,
  ) {
    // The light aggregates the plan read for every shard, else those of the shard's first page.
    const planned = planContextOf(scan.context);
    let judge = planned
      ? shardJudge(planned, await contextOf(planned.currency || 'USD', scan, settings, false))
      : undefined;
    let judged = 0;
    const pageAfter = (after: { afterConnectionId: string; afterResourceId: string }) => {
      const asked = deps.scanData.getScanData(
        {
          connectionIds: scan.connectionIds,
          until: timestampFromDate(scan.windowEnd),
          maxResources: pageSize,
          resourceIdFrom: shard.from ?? '',
          resourceIdTo: shard.to ?? '',
          parts: planned ? costs.ScanDataParts.PAGES : costs.ScanDataParts.RESOURCES,
          ...after,
        },
        { teamId: scan.teamId },
      );
      // Awaited below, or dropped when judging the page before it fails: never an unhandled rejection.
      asked.catch(() => {});
      return asked;
    };
    let next = pageAfter({ afterConnectionId: '', afterResourceId: '' });
    for (;;) {
      const response = await next;
      const page = scanDataOf(response);
      const last = page.resources.at(-1);
      // The next page is asked for before this one is judged: costs reads it while the rules run (two
      // pages in memory at most).
      if (response.hasMore) {
        if (!last) throw new Error('costs answered an empty page with more to follow');
        next = pageAfter({ afterConnectionId: last.connectionId, afterResourceId: last.resourceId });
      }
      // The first page carries the aggregates the per-resource rules read.
      judge ??= shardJudge(page, await contextOf(page.currency || 'USD', scan, settings, false));
      judge.add(page.resources);
      judged += page.resources.length;
      onPage(judged);
      if (!response.hasMore) return judge.finish();
    }
  }

  return {
    async plan(work, now, shardsFor, mostShards = 1) {
      if (work.connectionIds.length === 0) return { resources: 0, windowEnd: now, shards: [wholeScan] };
      const ask = (request: { parts: costs.ScanDataParts; until?: Timestamp; splitInto?: number }) =>
        deps.scanData.getScanData({ connectionIds: work.connectionIds, ...request }, { teamId: work.teamId });
      // Every aggregate of the window (currency, totals, commitments, data span, daily series, tag usage),
      // its resource count and the bounds of a fine split (fineShards), from one pass over the window read
      // here once for every shard and the merge rather than by each. (A costs of the version before
      // answers no count with them, and refuses the split: the scan is then one shard, whole, or split
      // by COUNT below.)
      const fine = fineShards(mostShards);
      const aggregates = { parts: costs.ScanDataParts.AGGREGATES };
      const counted = await ask({ ...aggregates, splitInto: fine }).catch((error: unknown) => {
        // Refused by the version before, or the bounds (long resource ids) would take the aggregates' answer
        // past one message: without them, then split by COUNT.
        const refused =
          error instanceof ValidationError && error.details.some((d) => d.field === 'split_into');
        if (fine > 1 && (refused || error instanceof BadRequestError)) return ask(aggregates);
        throw error;
      });
      const windowEnd = counted.windowEnd ? timestampDate(counted.windowEnd) : now;
      const context: PlanContext = {
        // Stored with the scan for every shard and the merge: not the fine split's bounds.
        aggregates: { ...scanDataOf({ ...counted, shardBounds: [] }), resources: [] },
        projectWide: true,
      };
      const count = shardsFor(counted.resourceCount);
      if (count <= 1) return { resources: counted.resourceCount, windowEnd, shards: [wholeScan], context };
      // Ranges of about equal size: the fine split's bounds taken every fine / count.
      if (counted.shardBounds.length === fine - 1)
        return {
          resources: counted.resourceCount,
          windowEnd,
          shards: rangeShards(coarseBounds(counted.shardBounds, count)),
          context,
        };
      // Cut by costs in the planned window: bounds by resource id alone.
      const { shardBounds } = await ask({
        until: timestampFromDate(windowEnd),
        parts: costs.ScanDataParts.COUNT,
        splitInto: count,
      });
      return { resources: counted.resourceCount, windowEnd, shards: rangeShards(shardBounds), context };
    },

    async runShard(scan, shard, progress) {
      if (scan.connectionIds.length === 0)
        return {
          resourcesScanned: 0,
          results: [],
          resourceIds: [],
          pending: undefined,
        };
      const settings = await settingsOf(scan.teamId);
      return judgeShard(scan, shard, settings, progress);
    },

    async runProjectRules(scan, pending) {
      if (scan.connectionIds.length === 0) return [];
      const settings = await settingsOf(scan.teamId);
      // The plan's aggregates, else (a plan that did not keep them) read now.
      const aggregates =
        projectWideOf(scan.context) ??
        scanDataOf(
          await deps.scanData.getScanData(
            {
              connectionIds: scan.connectionIds,
              until: timestampFromDate(scan.windowEnd),
              parts: costs.ScanDataParts.AGGREGATES,
            },
            { teamId: scan.teamId },
          ),
        );
      const parts = pending
        ? pending.map(pendingOf)
        : [(await judgeShard(scan, wholeScan, settings, () => {})).pending ?? emptyPending()];
      return finishScan(
        aggregates,
        parts,
        await contextOf(aggregates.currency || 'USD', scan, settings, true),
      );
    },
  };
}

/**
 * Runs every rule of the catalogue over the project's connections' data, read from costs: the same
 * runner as a scan's, with one shard.
 */
export async function scanProject(deps: ScanDeps, input: ScanProjectInput): Promise<ScanProjectOutcome> {
  if (input.connectionIds.length === 0) return { resourcesScanned: 0, results: [], resourceIds: [] };
  const runner = rulesRunner(deps, async () => ({
    requiredTags: input.requiredTags,
    minDailyImpact: input.minDailyImpact,
  }));
  const work = {
    scanId: '',
    teamId: input.teamId,
    projectId: input.projectId,
    connectionIds: input.connectionIds,
  };
  const planned = input.until ? undefined : await runner.plan(work, input.now, () => 1);
  const scan = {
    ...work,
    windowEnd: input.until ?? planned!.windowEnd,
    now: input.now,
    context: planned?.context,
  };
  const shard = await runner.runShard(scan, wholeScan, () => {});
  const results = [
    ...shard.results,
    ...(await runner.runProjectRules(scan, shard.pending ? [shard.pending] : [])),
  ];
  return { resourcesScanned: shard.resourcesScanned, results, resourceIds: shard.resourceIds };
}

/**
 * Every page of the project's scan data (costs pages resources by (connection id, resource id), each
 * page under the gRPC message limit), joined into one answer: the first page's aggregates and every
 * resource, costliest first as the rules have always read them. A page that cannot be read rejects (costs
 * down: UnavailableError, which the worker retries), so no scan judges, nor resolves findings from, part
 * of the data. Memory: the scan holds every resource of the window at once (one ScanResource, about
 * 1 KB plus its tags, and the rules' results), so 100,000 resources take some hundreds of MB.
 */
export async function readAllPages(
  deps: ScanDeps,
  input: Pick<ScanProjectInput, 'teamId' | 'connectionIds' | 'until'>,
): Promise<costs.GetScanDataResponse> {
  const first = await deps.scanData.getScanData(
    { connectionIds: input.connectionIds, until: input.until ? timestampFromDate(input.until) : undefined },
    { teamId: input.teamId },
  );
  const resources = [...first.resources];
  let page = first;
  while (page.hasMore) {
    const last = page.resources.at(-1);
    if (!last) throw new Error('costs answered an empty page with more to follow');
    page = await deps.scanData.getScanData(
      {
        connectionIds: input.connectionIds,
        // The first page's window, so that every page covers the same one.
        until: first.windowEnd,
        afterConnectionId: last.connectionId,
        afterResourceId: last.resourceId,
      },
      { teamId: input.teamId },
    );
    resources.push(...page.resources);
  }
  resources.sort(
    (a, b) =>
      b.effectiveCost - a.effectiveCost ||
      compare(a.connectionId, b.connectionId) ||
      compare(a.resourceId, b.resourceId),
  );
  return { ...first, resources, hasMore: false };
}

const compare = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);

import { timestampDate, timestampFromDate, type Timestamp } from '@bufbuild/protobuf/wkt';
import { costs } from '@costgov/contracts';
import type { RpcClient } from '@costgov/rpc';
import { allRules } from './catalogue';
import { rankSavings } from './rank';
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

/** Runs every rule of the catalogue over the project's connections' data, read from costs. */
export async function scanProject(deps: ScanDeps, input: ScanProjectInput): Promise<ScanProjectOutcome> {
  if (input.connectionIds.length === 0) return { resourcesScanned: 0, results: [], resourceIds: [] };
  const response = await readAllPages(deps, input);
  const data = scanDataOf(response);
  const currency = data.currency || 'USD';
  const context = {
    requiredTags: input.requiredTags,
    now: input.now,
    currency,
    minDailyImpact:
      typeof input.minDailyImpact === 'function'
        ? await input.minDailyImpact(currency)
        : (input.minDailyImpact ?? defaultMinDailyImpact),
  };
  const results = rankSavings(
    allRules.flatMap((rule) => rule.evaluate(data, context)),
    data,
    input.now,
  );
  const resourcesScanned = data.totals.reduce((sum, totals) => sum + totals.resources, 0);
  return { resourcesScanned, results, resourceIds: data.resources.map((resource) => resource.resourceId) };
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

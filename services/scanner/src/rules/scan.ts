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
  /** True when costs returned only the costliest resources of a larger set. */
  truncated: boolean;
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
  if (input.connectionIds.length === 0) return { resourcesScanned: 0, results: [], truncated: false };
  const response = await deps.scanData.getScanData(
    { connectionIds: input.connectionIds, until: input.until ? timestampFromDate(input.until) : undefined },
    { teamId: input.teamId },
  );
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
  return { resourcesScanned, results, truncated: data.truncated };
}

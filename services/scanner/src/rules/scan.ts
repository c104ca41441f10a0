import { timestampDate, timestampFromDate } from '@bufbuild/protobuf/wkt';
import { costs } from '@costgov/contracts';
import { createRpcClient, type RpcClient } from '@costgov/rpc';
import { allRules } from './catalogue';
import type { RuleResult, ScanData } from './types';

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
  /** End of the window; by default the end of the connections' latest charge period. */
  until?: Date;
}

export interface ScanProjectOutcome {
  resourcesScanned: number;
  results: RuleResult[];
  /** True when costs returned only the costliest resources of a larger set. */
  truncated: boolean;
}

/** A client of costs' ScanDataService for the worker (close it when the worker stops). */
export const scanDataClient = (address = process.env.COSTS_ADDR ?? '127.0.0.1:50054') =>
  createRpcClient(costs.ScanDataService, address, { deadlineMs: 120_000 });

/** The proto answer as the rules read it. */
export function scanDataOf(response: costs.GetScanDataResponse): ScanData {
  const iso = (at: Parameters<typeof timestampDate>[0] | undefined) =>
    at ? timestampDate(at).toISOString() : '';
  return {
    windowStart: iso(response.windowStart),
    windowEnd: iso(response.windowEnd),
    currency: response.currency,
    truncated: response.truncated,
    resources: response.resources.map((resource) => ({
      connectionId: resource.connectionId,
      resourceId: resource.resourceId,
      resourceName: resource.resourceName,
      resourceType: resource.resourceType,
      serviceName: resource.serviceName,
      serviceCategory: resource.serviceCategory,
      regionId: resource.regionId,
      subAccountId: resource.subAccountId,
      providerName: resource.providerName,
      skuId: resource.skuId,
      chargeCategory: resource.chargeCategory,
      pricingUnit: resource.pricingUnit,
      consumedUnit: resource.consumedUnit,
      pricingQuantity: resource.pricingQuantity,
      consumedQuantity: resource.consumedQuantity,
      tags: { ...resource.tags },
      chargeDescription: resource.chargeDescription,
      chargeClass: resource.chargeClass,
      pricingCategory: resource.pricingCategory,
      commitmentDiscountId: resource.commitmentDiscountId,
      commitmentDiscountCategory: resource.commitmentDiscountCategory,
      commitmentDiscountStatus: resource.commitmentDiscountStatus,
      commitmentDiscountType: resource.commitmentDiscountType,
      capacityReservationId: resource.capacityReservationId,
      capacityReservationStatus: resource.capacityReservationStatus,
      unusedCommitmentCost: resource.unusedCommitmentCost,
      unusedCapacityReservationCost: resource.unusedCapacityReservationCost,
      billedCost: resource.billedCost,
      effectiveCost: resource.effectiveCost,
      listCost: resource.listCost ?? null,
      contractedCost: resource.contractedCost ?? null,
      daysSeen: resource.daysSeen,
      hoursSeen: resource.hoursSeen,
      firstSeen: iso(resource.firstSeen),
      lastSeen: iso(resource.lastSeen),
    })),
    totals: response.totals.map((totals) => ({
      connectionId: totals.connectionId,
      effectiveCost: totals.effectiveCost,
      untaggedCost: totals.untaggedCost,
      unattributedCost: totals.unattributedCost,
      resources: totals.resources,
      records: Number(totals.records),
    })),
    daily: response.daily.map((row) => ({
      connectionId: row.connectionId,
      day: row.day,
      serviceName: row.serviceName,
      serviceCategory: row.serviceCategory,
      effectiveCost: row.effectiveCost,
      dataTransferCost: row.dataTransferCost,
    })),
    tagUsage: response.tagUsage.map((usage) => ({
      key: usage.key,
      value: usage.value,
      resources: usage.resources,
      effectiveCost: usage.effectiveCost,
    })),
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
  const context = { requiredTags: input.requiredTags, now: input.now, currency: data.currency || 'USD' };
  const results = allRules.flatMap((rule) => rule.evaluate(data, context));
  const resourcesScanned = data.totals.reduce((sum, totals) => sum + totals.resources, 0);
  return { resourcesScanned, results, truncated: data.truncated };
}

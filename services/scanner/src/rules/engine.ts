import { allRules } from './catalogue';
import { rankSavings } from './rank';
import { emptySummary, mergeSummaries, summaryOf } from './summary';
import type { RuleContext, RuleResult, ScanAggregates, ScanResource, ScanSummary } from './types';

/**
 * How a scan runs the catalogue without holding every resource (issue 19). A scan is read in shards (a
 * hash of the resource id), each shard page by page; then the project-wide rules run once on costs'
 * aggregates. One engine whatever the number of shards: a scan of one shard is the same code.
 *
 * Per page, every rule's `resources` part judges the page's resources, except those a rule needs the
 * whole scan for (`needsWholeScan`: an old instance compared with the prices of every current one, a
 * steady on-demand resource handed its share of its connection's unused commitment costliest first)
 * and those billed under the id of a commitment the aggregates name (commitments-unused's finding on the
 * commitment is weighed with the resource's own). Those are kept, with the page's part of the summary
 * (types.ts ScanSummary), as the shard's `pending` judgements: the merge judges them once, with the
 * whole summary, so their findings are exactly those of a scan that read everything at once.
 *
 * Memory of a shard: its results, the resources with a finding until the shard ends (their findings are
 * weighed per resource by rankSavings: every resource id falls in one shard), the pending resources and
 * the resource ids; never all the shard's resources. The merge holds the pending resources of every
 * shard: old-generation instances, steady on-demand compute and commitments, not the whole estate.
 */

/** What a shard leaves to the end of the scan: its part of the summary and the resources judged there. */
export interface PendingJudgements {
  summary: ScanSummary;
  resources: ScanResource[];
}

export interface ShardJudgement {
  resourcesScanned: number;
  /** The per-resource findings of the resources judged in the shard, weighed per resource. */
  results: RuleResult[];
  resourceIds: string[];
  /** Undefined when the shard leaves nothing (no pending resource, nothing in its summary). */
  pending?: PendingJudgements;
}

export const emptyPending = (): PendingJudgements => ({ summary: emptySummary(), resources: [] });

/**
 * A shard's pending judgements as stored (JSON) and handed back: checked to be this engine's shape, so
 * that a foreign value fails the merge with a clear error instead of judging nothing.
 */
export function pendingOf(stored: unknown): PendingJudgements {
  const value = stored as Partial<PendingJudgements> | null;
  if (
    !value ||
    typeof value !== 'object' ||
    !Array.isArray(value.resources) ||
    !value.summary ||
    typeof value.summary.unnamedUnused !== 'object' ||
    typeof value.summary.peers !== 'object'
  )
    throw new Error("a shard's pending judgements are not the rule engine's (summary and resources)");
  return value as PendingJudgements;
}

/** Costliest first, then by connection and resource id: the order rules and rankSavings read resources in. */
export const costliestFirst = (a: ScanResource, b: ScanResource): number =>
  b.effectiveCost - a.effectiveCost ||
  compare(a.connectionId, b.connectionId) ||
  compare(a.resourceId, b.resourceId);

const compare = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);

const resourceRules = allRules.filter((rule) => rule.resources);
const projectRules = allRules.filter((rule) => rule.project);

/** The per-resource rules of the catalogue over `resources`, with the aggregates and a summary. */
function judgeResources(
  resources: ScanResource[],
  aggregates: ScanAggregates,
  context: RuleContext,
  summary: ScanSummary,
): RuleResult[] {
  const data = { ...aggregates, resources };
  return resourceRules.flatMap((rule) => rule.resources!(data, { ...context, summary }));
}

/**
 * Judges one shard page by page. `aggregates` are those of the shard's first page (costs' RESOURCES
 * part: window, data span, currency, totals and commitments, the same for every shard of the scan).
 */
export function shardJudge(aggregates: ScanAggregates, context: RuleContext) {
  const commitmentIds = new Set(aggregates.commitments.map((commitment) => commitment.commitmentDiscountId));
  const wholeScan = (resource: ScanResource) =>
    commitmentIds.has(resource.resourceId) ||
    allRules.some((rule) => rule.needsWholeScan?.(resource, aggregates, context.now));
  let summary = emptySummary();
  const results: RuleResult[] = [];
  /** Resources with a finding, by id: rankSavings weighs a resource's findings together. */
  const found = new Map<string, ScanResource[]>();
  const pending: ScanResource[] = [];
  const resourceIds: string[] = [];

  return {
    /** Judges one page of the shard's resources (any page order). */
    add(page: readonly ScanResource[]): void {
      summary = mergeSummaries(summary, summaryOf(page, aggregates, context.now));
      const here: ScanResource[] = [];
      for (const resource of page) {
        resourceIds.push(resource.resourceId);
        (wholeScan(resource) ? pending : here).push(resource);
      }
      const judged = judgeResources(here, aggregates, context, emptySummary());
      // Every resource of the page billed under a found id (one id may be billed by several connections).
      const byId = new Map<string, ScanResource[]>();
      for (const resource of here)
        byId.set(resource.resourceId, [...(byId.get(resource.resourceId) ?? []), resource]);
      for (const result of judged) {
        const same = found.get(result.resourceId) ?? [];
        for (const resource of byId.get(result.resourceId) ?? [])
          if (!same.includes(resource)) same.push(resource);
        if (same.length > 0) found.set(result.resourceId, same);
      }
      for (const result of judged) results.push(result);
    },
    /** The shard's outcome: its findings weighed per resource, and what is left to the merge. */
    finish(): ShardJudgement {
      // A resource id also billed by a pending resource (another connection's) is judged with it.
      const pendingIds = new Set(pending.map((resource) => resource.resourceId));
      for (const [id, resources] of found)
        if (pendingIds.has(id)) {
          pending.push(...resources);
          found.delete(id);
        }
      const kept = results.filter((result) => !pendingIds.has(result.resourceId));
      const resources = [...found.values()].flat().sort(costliestFirst);
      return {
        resourcesScanned: resourceIds.length,
        results: rankSavings(kept, { ...aggregates, resources }, context.now),
        resourceIds,
        pending:
          pending.length > 0 ||
          Object.keys(summary.peers).length > 0 ||
          Object.keys(summary.unnamedUnused).length > 0
            ? { summary, resources: pending }
            : undefined,
      };
    },
  };
}

/**
 * The end of a scan: the pending resources of every shard judged with the whole summary, the
 * project-wide rules on the aggregates (costs' AGGREGATES part), and those findings weighed per resource.
 */
export function finishScan(
  aggregates: ScanAggregates,
  pending: readonly PendingJudgements[],
  context: RuleContext,
): RuleResult[] {
  const summary = pending.reduce((sum, part) => mergeSummaries(sum, part.summary), emptySummary());
  const resources = pending.flatMap((part) => part.resources).sort(costliestFirst);
  const results = [
    ...projectRules.flatMap((rule) => rule.project!(aggregates, context)),
    ...judgeResources(resources, aggregates, context, summary),
  ];
  return rankSavings(results, { ...aggregates, resources }, context.now);
}

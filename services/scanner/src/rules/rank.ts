import type { RuleResult, ScanData } from './types';
import { dataSpan, money, monthlyCostOf } from './window';

/** A resource not billed in the data's last this many days is taken as gone: nothing is left to save. */
export const goneAfterDays = 2;
const dayMs = 86_400_000;

/**
 * Rules whose advice on one resource excludes the others': commit to it, schedule it, move it to a
 * newer family, or release it. Following one changes (or removes) what the others would save.
 */
export const exclusiveRules: ReadonlySet<string> = new Set([
  'commitments-steady-on-demand',
  'compute-nonprod-always-on',
  'compute-previous-generation',
  'network-idle-public-ip',
]);

/**
 * One place where a resource's findings are weighed together, after the rules ran and before the
 * findings are recorded, so that no resource's findings promise more than it costs a month:
 * - of its exclusive recommendations, the one saving most carries its savings; each other one says it
 *   is an alternative to it and carries none;
 * - the savings left on the resource (the best exclusive one and additive ones such as extended
 *   support) are capped, in that order, at the resource's monthly cost.
 * A resource (or commitment) last billed more than `goneAfterDays` days before the data ends is taken
 * as gone (released, deleted, expired): its findings keep their text, say so, and carry no savings.
 * Findings about a connection, a service or a tag (no resource of the data) pass unchanged.
 */
export function rankSavings(results: RuleResult[], data: ScanData): RuleResult[] {
  return capSavings(withoutGone(results, data), data);
}

function withoutGone(results: RuleResult[], data: ScanData): RuleResult[] {
  const { end } = dataSpan(data);
  const lastSeen = new Map<string, number>();
  for (const item of [
    ...data.resources.map((r) => ({ id: r.resourceId, lastSeen: r.lastSeen })),
    ...data.commitments.map((c) => ({ id: c.commitmentDiscountId, lastSeen: c.lastSeen })),
  ])
    lastSeen.set(item.id, Math.max(lastSeen.get(item.id) ?? 0, Date.parse(item.lastSeen)));
  return results.map((result) => {
    const last = lastSeen.get(result.resourceId);
    if (result.estimatedMonthlySavings === undefined || last === undefined) return result;
    if (end - last <= goneAfterDays * dayMs) return result;
    const { estimatedMonthlySavings: _savings, projectedFromDays: _days, ...rest } = result;
    const date = new Date(last - 1).toISOString().slice(0, 10);
    return {
      ...rest,
      description: `${result.description} Last billed on ${date}, ${Math.floor((end - last) / dayMs)} days before the data ends: if it is gone, nothing is left to save.`,
    };
  });
}

function capSavings(results: RuleResult[], data: ScanData): RuleResult[] {
  const monthlyCost = new Map(
    data.resources.map((resource) => [`${resource.resourceId}`, monthlyCostOf(resource)]),
  );
  const byResource = new Map<string, RuleResult[]>();
  for (const result of results) {
    if (result.estimatedMonthlySavings === undefined || !monthlyCost.has(result.resourceId)) continue;
    byResource.set(result.resourceId, [...(byResource.get(result.resourceId) ?? []), result]);
  }
  const replaced = new Map<RuleResult, RuleResult>();
  for (const [resourceId, found] of byResource) {
    const exclusive = found
      .filter((result) => exclusiveRules.has(result.ruleId))
      .sort(
        (a, b) => b.estimatedMonthlySavings! - a.estimatedMonthlySavings! || a.ruleId.localeCompare(b.ruleId),
      );
    const [best, ...alternatives] = exclusive;
    for (const alternative of alternatives) {
      const { estimatedMonthlySavings, projectedFromDays: _projected, ...rest } = alternative;
      replaced.set(alternative, {
        ...rest,
        description: `${alternative.description} Alternative to "${best!.title}" (${best!.ruleId}), which saves more and carries the savings: ${estimatedMonthlySavings} ${alternative.currency} a month if chosen instead, not counted on top.`,
      });
    }
    let left = monthlyCost.get(resourceId)!;
    const counted = [
      ...(best ? [best] : []),
      ...found.filter((result) => !exclusiveRules.has(result.ruleId)),
    ];
    for (const result of counted) {
      const savings = Math.max(0, Math.min(result.estimatedMonthlySavings!, money(left)));
      left -= savings;
      if (savings < result.estimatedMonthlySavings!)
        replaced.set(result, {
          ...result,
          estimatedMonthlySavings: savings,
          description: `${result.description} Capped at ${savings} ${result.currency} a month: the resource's other findings already count the rest of its cost.`,
        });
    }
  }
  return results.map((result) => replaced.get(result) ?? result);
}

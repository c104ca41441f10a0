import type { RuleResult, ScanData } from './types';
import { money, monthlyCostOf } from './window';

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
 * Findings about a connection, a service, a tag or a commitment discount (no resource of the data) pass
 * unchanged.
 */
export function rankSavings(results: RuleResult[], data: ScanData): RuleResult[] {
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

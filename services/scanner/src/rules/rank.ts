import type { RuleResult, ScanData, Severity } from './types';
import { connectionEnd, goneAfterDays, money, monthlyCostOf } from './window';

const dayMs = 86_400_000;
const lowered: Record<Severity, Severity> = { critical: 'high', high: 'medium', medium: 'low', low: 'low' };

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
 * A resource (or commitment) last billed more than `goneAfterDays` days before its own connection's
 * data ends (`connectionEnd`: usage-based rows only, capped at `now`) is taken as gone (released,
 * deleted, expired): its findings keep their text, say when it was last billed, drop one severity and
 * carry no savings. Findings about a connection, a service or a tag (no resource of the data) pass
 * unchanged.
 */
export function rankSavings(results: RuleResult[], data: ScanData, now?: Date): RuleResult[] {
  return capSavings(withoutGone(results, data, now), data);
}

function withoutGone(results: RuleResult[], data: ScanData, now?: Date): RuleResult[] {
  // Per resource id: its last billing and how long before its connection's data end that was (the
  // least over its connections, when several bill the same id).
  const seen = new Map<string, { last: number; gap: number }>();
  for (const item of [
    ...data.resources.map((r) => ({ id: r.resourceId, connectionId: r.connectionId, lastSeen: r.lastSeen })),
    ...data.commitments.map((c) => ({
      id: c.commitmentDiscountId,
      connectionId: c.connectionId,
      lastSeen: c.lastSeen,
    })),
  ]) {
    const last = Date.parse(item.lastSeen);
    const gap = connectionEnd(data, item.connectionId, now) - last;
    const known = seen.get(item.id);
    if (!known || gap < known.gap) seen.set(item.id, { last, gap });
  }
  return results.map((result) => {
    const item = seen.get(result.resourceId);
    if (!item || item.gap <= goneAfterDays * dayMs) return result;
    const { estimatedMonthlySavings: _savings, projectedFromDays: _days, ...rest } = result;
    const date = new Date(item.last - 1).toISOString().slice(0, 10);
    return {
      ...rest,
      severity: lowered[result.severity],
      description: `${result.description} Last billed on ${date}, ${Math.floor(item.gap / dayMs)} days before its connection's data ends: it looks released or deleted, so nothing is left to save; check that it is gone.`,
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

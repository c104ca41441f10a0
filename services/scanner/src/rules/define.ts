import { summaryOf } from './summary';
import type { Rule, RuleInfo, RuleParts } from './types';

/**
 * A rule of the catalogue from its description and parts, with `evaluate` running both parts over the
 * whole data at once (the summary computed from every resource): what the rule tests call, and what a
 * scan of one shard comes to.
 */
export function defineRule(rule: RuleInfo & RuleParts): Rule {
  return {
    ...rule,
    evaluate(data, context) {
      return [
        ...(this.project?.(data, context) ?? []),
        ...(this.resources?.(data, { ...context, summary: summaryOf(data.resources, data, context.now) }) ??
          []),
      ];
    },
  };
}

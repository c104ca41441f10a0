import { defineRule } from './define';
import { environmentOf, isNonProduction } from './environment';
import {
  coveredDays,
  isHourly,
  minJudgedDays,
  money,
  monthlyCostOf,
  projectedDays,
  resourceTypeOf,
  runningHours,
} from './window';

/** Running at least this share of the hours from its first to its last seen counts as around the clock. */
const alwaysOn = 0.9;
/** Share saved by running only 12 hours on weekdays (60 of 168 hours a week). */
const scheduleSaving = 1 - 60 / 168;

/** A dev/test/staging resource billed by the hour through nights and weekends. */
export const nonProductionAlwaysOn = defineRule({
  id: 'compute-nonprod-always-on',
  severity: 'medium',
  category: 'compute',
  title: 'Non-production resource runs around the clock',
  description: `A resource tagged as a non-production environment ran at least ${alwaysOn * 100}% of the hours from its first to its last charge, nights and weekends included, over ${minJudgedDays} days or more.`,
  recommendation:
    'Stop it outside working hours with a schedule (instance scheduler, auto-stop), or scale it to zero.',
  needs: `${minJudgedDays} days of the resource's hourly-priced charges (one month of data is enough) and an environment tag (env, environment, stage, tier) naming a non-production value.`,
  savings:
    'Its cost per covered day (first to last seen) times 30.44, times 64% (running 60 of 168 hours a week): an estimate.',
  neverFlags:
    'Production or untagged resources; resources not priced by the hour (storage, requests); resources seen for fewer than 14 days.',
  resources(data, { currency }) {
    return data.resources.flatMap((resource) => {
      const environment = environmentOf(resource.tags);
      if (!isNonProduction(environment) || !isHourly(resource) || resource.effectiveCost <= 0) return [];
      const days = coveredDays(resource);
      const hours = days * 24;
      const running = runningHours(resource);
      if (days < minJudgedDays || running < alwaysOn * hours) return [];
      const cost = monthlyCostOf(resource);
      const savings = money(cost * scheduleSaving);
      return [
        {
          ruleId: this.id,
          resourceId: resource.resourceId,
          resourceType: resourceTypeOf(resource),
          severity: this.severity,
          title: this.title,
          description: `${resource.resourceId} (environment ${environment}) ran ${Math.round(running)} of the ${Math.round(hours)} hours from its first to its last charge, costing ${money(cost)} ${currency} a month.`,
          recommendation: `Schedule ${resource.resourceId} to run 12 hours on weekdays: about ${savings} ${currency} a month less (estimate: 64% of its cost).`,
          estimatedMonthlySavings: savings,
          projectedFromDays: projectedDays(days),
          currency,
        },
      ];
    });
  },
});

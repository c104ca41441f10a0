import { environmentOf, isNonProduction } from './environment';
import type { Rule } from './types';
import { isHourly, money, monthly, resourceTypeOf, windowHours } from './window';

/** Running at least this share of the window's hours counts as around the clock. */
const alwaysOn = 0.9;
/** Share saved by running only 12 hours on weekdays (60 of 168 hours a week). */
const scheduleSaving = 1 - 60 / 168;

/** A dev/test/staging resource billed by the hour through nights and weekends. */
export const nonProductionAlwaysOn: Rule = {
  id: 'compute-nonprod-always-on',
  severity: 'medium',
  category: 'compute',
  title: 'Non-production resource runs around the clock',
  description:
    'A resource tagged as a non-production environment is billed every hour of the window, nights and weekends included.',
  recommendation:
    'Stop it outside working hours with a schedule (instance scheduler, auto-stop), or scale it to zero.',
  evaluate(data, { currency }) {
    const hours = windowHours(data);
    return data.resources.flatMap((resource) => {
      const environment = environmentOf(resource.tags);
      if (!isNonProduction(environment) || !isHourly(resource)) return [];
      if (resource.hoursSeen < alwaysOn * hours || resource.effectiveCost <= 0) return [];
      const savings = money(monthly(resource.effectiveCost, data) * scheduleSaving);
      return [
        {
          ruleId: this.id,
          resourceId: resource.resourceId,
          resourceType: resourceTypeOf(resource),
          severity: this.severity,
          title: this.title,
          description: `${resource.resourceId} (environment ${environment}) was billed ${resource.hoursSeen} of ${Math.round(hours)} hours.`,
          recommendation: `Schedule ${resource.resourceId} to run 12 hours on weekdays: about ${savings} ${currency} a month less.`,
          estimatedMonthlySavings: savings,
          currency,
        },
      ];
    });
  },
};

import { defineRule } from './define';
import { coveredDays, money, perMonth, projectedDays, resourceTypeOf, spanText } from './window';

/** Charges for running an engine or runtime past its standard support (RDS, EKS, ... Extended Support). */
const extendedSupport = /\bextended support\b/i;

/** A resource paying extended-support charges for an out-of-support version. */
export const extendedSupportCharges = defineRule({
  id: 'spend-extended-support',
  severity: 'high',
  category: 'spend',
  title: 'Extended-support charges',
  description:
    'The resource pays an extended-support surcharge because it runs a version past its end of standard support.',
  recommendation: 'Upgrade it to a supported version: the surcharge stops, and security fixes continue.',
  needs:
    'Any charge of the resource whose ChargeDescription names Extended Support (costs sums those rows as its extended-support cost); any number of days.',
  savings:
    "The extended-support rows' cost per covered day (first to last seen of the resource) times 30.44 (the resource's whole cost only when its costliest charge is the surcharge and costs did not single the rows out); capped with the resource's other findings at its monthly cost.",
  neverFlags: 'Resources on a supported version.',
  resources(data, { currency }) {
    return data.resources.flatMap((resource) => {
      // Costs sums the rows whose ChargeDescription names extended support (extendedSupportCost): the
      // surcharge is seldom the resource's costliest charge (the instance beneath it is). A resource
      // whose costliest charge names it without costs having singled the rows out counts whole.
      const singled = resource.extendedSupportCost > 0;
      if (!singled && !extendedSupport.test(resource.chargeDescription)) return [];
      const days = coveredDays(resource);
      const surcharge = singled ? resource.extendedSupportCost : resource.effectiveCost;
      const savings = money(perMonth(surcharge, days));
      return [
        {
          ruleId: this.id,
          resourceId: resource.resourceId,
          resourceType: resourceTypeOf(resource),
          severity: this.severity,
          title: this.title,
          description: `${resource.resourceId} pays an extended-support surcharge: ${money(surcharge)} ${currency} over ${spanText(resource)}, of ${money(resource.effectiveCost)} ${currency} in all${singled ? '' : ` ("${resource.chargeDescription}")`}.`,
          recommendation: `Upgrade ${resource.resourceId} to a supported version: the surcharge, ${savings} ${currency} a month, stops.`,
          estimatedMonthlySavings: savings,
          projectedFromDays: projectedDays(days),
          currency,
        },
      ];
    });
  },
});

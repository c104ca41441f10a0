import type { Rule } from './types';
import { coveredDays, money, perMonth, projectedDays, resourceTypeOf, spanText } from './window';

/** Charges for running an engine or runtime past its standard support (RDS, EKS, ... Extended Support). */
const extendedSupport = /\bextended support\b/i;

/** A resource paying extended-support charges for an out-of-support version. */
export const extendedSupportCharges: Rule = {
  id: 'spend-extended-support',
  severity: 'high',
  category: 'spend',
  title: 'Extended-support charges',
  description:
    'The resource pays an extended-support surcharge because it runs a version past its end of standard support.',
  recommendation: 'Upgrade it to a supported version: the surcharge stops, and security fixes continue.',
  needs:
    "A charge description naming Extended Support on the resource's costliest charge; any number of days.",
  savings:
    "The extended-support rows' cost per covered day (first to last seen of the resource) times 30.44; capped with the resource's other findings at its monthly cost.",
  neverFlags: 'Resources on a supported version.',
  evaluate(data, { currency }) {
    return data.resources.flatMap((resource) => {
      if (!extendedSupport.test(resource.chargeDescription)) return [];
      const days = coveredDays(resource);
      // The surcharge rows' own cost; the resource's whole cost when costs did not single them out.
      const surcharge =
        resource.extendedSupportCost > 0 ? resource.extendedSupportCost : resource.effectiveCost;
      const savings = money(perMonth(surcharge, days));
      return [
        {
          ruleId: this.id,
          resourceId: resource.resourceId,
          resourceType: resourceTypeOf(resource),
          severity: this.severity,
          title: this.title,
          description: `${resource.resourceId} is billed "${resource.chargeDescription}": ${money(surcharge)} ${currency} of surcharge over ${spanText(resource)}, of ${money(resource.effectiveCost)} ${currency} in all.`,
          recommendation: `Upgrade ${resource.resourceId} to a supported version: the surcharge, ${savings} ${currency} a month, stops.`,
          estimatedMonthlySavings: savings,
          projectedFromDays: projectedDays(days),
          currency,
        },
      ];
    });
  },
};

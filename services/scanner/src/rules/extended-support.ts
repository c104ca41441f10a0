import type { Rule } from './types';
import { money, monthly, resourceTypeOf } from './window';

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
  evaluate(data, { currency }) {
    return data.resources.flatMap((resource) => {
      if (!extendedSupport.test(resource.chargeDescription)) return [];
      const savings = money(monthly(resource.effectiveCost, data));
      return [
        {
          ruleId: this.id,
          resourceId: resource.resourceId,
          resourceType: resourceTypeOf(resource),
          severity: this.severity,
          title: this.title,
          description: `${resource.resourceId} is billed "${resource.chargeDescription}".`,
          recommendation: `Upgrade ${resource.resourceId} to a supported version: ${savings} ${currency} a month less.`,
          estimatedMonthlySavings: savings,
          currency,
        },
      ];
    });
  },
};

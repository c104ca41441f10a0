import type { Rule } from './types';
import { money, monthly } from './window';

/** Providers describe the hourly charge of an address attached to nothing as "idle" (AWS: Idle public IPv4 address). */
const idleAddress = /\bidle\b.*\b(ip|ipv4|ipv6|address)\b/i;

/** A public IP address billed while attached to nothing. */
export const idlePublicIp: Rule = {
  id: 'network-idle-public-ip',
  severity: 'low',
  category: 'network',
  title: 'Idle public IP address',
  description: 'A public IP address was billed as idle: it is allocated but attached to nothing running.',
  recommendation: 'Release the address, or attach it to the resource that needs it.',
  evaluate(data, { currency }) {
    return data.resources.flatMap((resource) => {
      if (!idleAddress.test(resource.chargeDescription)) return [];
      const savings = money(monthly(resource.effectiveCost, data));
      return [
        {
          ruleId: this.id,
          resourceId: resource.resourceId,
          resourceType: resource.resourceType || 'public-ip',
          severity: this.severity,
          title: this.title,
          description: `${resource.resourceId} was billed as an idle address ("${resource.chargeDescription}") for ${resource.hoursSeen} hours.`,
          recommendation: `Release ${resource.resourceId} if nothing needs it: ${savings} ${currency} a month.`,
          estimatedMonthlySavings: savings,
          currency,
        },
      ];
    });
  },
};

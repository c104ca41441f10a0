import { defineRule } from './define';
import { coveredDays, money, monthlyCostOf, projectedDays, spanText } from './window';

/** Providers describe the hourly charge of an address attached to nothing as "idle" (AWS: Idle public IPv4 address). */
const idleAddress = /\bidle\b.*\b(ip|ipv4|ipv6|address)\b/i;

/** A public IP address billed while attached to nothing. */
export const idlePublicIp = defineRule({
  id: 'network-idle-public-ip',
  severity: 'low',
  category: 'network',
  title: 'Idle public IP address',
  description: 'A public IP address was billed as idle: it is allocated but attached to nothing running.',
  recommendation: 'Release the address, or attach it to the resource that needs it.',
  needs: 'A charge description naming an idle address (AWS "Idle public IPv4 address"); any number of days.',
  savings: 'What the address cost per covered day (first to last seen) times 30.44.',
  neverFlags: 'Addresses attached to a running resource (billed as in use).',
  resources(data, { currency }) {
    return data.resources.flatMap((resource) => {
      if (!idleAddress.test(resource.chargeDescription)) return [];
      const days = coveredDays(resource);
      const savings = money(monthlyCostOf(resource));
      return [
        {
          ruleId: this.id,
          resourceId: resource.resourceId,
          resourceType: resource.resourceType || 'public-ip',
          severity: this.severity,
          title: this.title,
          description: `${resource.resourceId} was billed as an idle address ("${resource.chargeDescription}") for ${resource.hoursSeen} hours over ${spanText(resource)}: ${money(resource.effectiveCost)} ${currency}.`,
          recommendation: `Release ${resource.resourceId} if nothing needs it: ${savings} ${currency} a month.`,
          estimatedMonthlySavings: savings,
          projectedFromDays: projectedDays(days),
          currency,
        },
      ];
    });
  },
});

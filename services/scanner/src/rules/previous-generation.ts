import type { Rule } from './types';
import { money, monthly, resourceTypeOf } from './window';

/** AWS instance families a current generation replaces at a lower price per unit of work. */
const oldInstance =
  /\b(t1|t2|m1|m2|m3|m4|c1|c3|c4|r3|r4|i2|d2|g2|g3|p2|x1)\.(nano|micro|small|medium|\d*x?large)\b/i;
/** gp2 volumes (gp3 costs about 20% less per GB) and magnetic (standard) volumes. */
const gp2Volume = /\bgp2\b/i;
const magneticVolume = /\bmagnetic\b/i;
/** Estimated share saved by moving: a current instance family typically costs about 10% less; gp3 20% less than gp2. */
const instanceShare = 0.1;
const gp2Share = 0.2;

/** Instances and volumes of a family the provider has superseded (read from the charge description). */
export const previousGeneration: Rule = {
  id: 'compute-previous-generation',
  severity: 'low',
  category: 'compute',
  title: 'Previous-generation instance or volume family',
  description:
    'The resource runs on a superseded instance family (t2, m4, c4, r4, g3, ...) or volume type (gp2, magnetic).',
  recommendation:
    'Move it to the current generation (e.g. t3/t4g, m6i/m7g, g5; gp3 volumes): usually cheaper and faster.',
  evaluate(data, { currency }) {
    return data.resources.flatMap((resource) => {
      const text = resource.chargeDescription;
      const family =
        oldInstance.exec(text)?.[0] ??
        (gp2Volume.test(text) ? 'gp2' : magneticVolume.test(text) ? 'magnetic' : '');
      if (!family) return [];
      // Magnetic volumes are cheaper per GB than gp3: moving them is for support and speed, not money.
      const share = family === 'gp2' ? gp2Share : family === 'magnetic' ? 0 : instanceShare;
      const savings = share > 0 ? money(monthly(resource.effectiveCost, data) * share) : undefined;
      const target = family === 'gp2' || family === 'magnetic' ? 'gp3' : 'its current-generation family';
      return [
        {
          ruleId: this.id,
          resourceId: resource.resourceId,
          resourceType: resourceTypeOf(resource),
          severity: this.severity,
          title: this.title,
          description: `${resource.resourceId} is ${family}, a previous generation ("${text}").`,
          recommendation:
            savings === undefined
              ? `Move ${resource.resourceId} to ${target}.`
              : `Move ${resource.resourceId} to ${target}: about ${Math.round(share * 100)}% less, ${savings} ${currency} a month (estimate).`,
          ...(savings === undefined ? {} : { estimatedMonthlySavings: savings }),
          currency,
        },
      ];
    });
  },
};

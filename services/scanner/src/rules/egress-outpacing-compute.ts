import { defineRule } from './define';
import { byConnection, dailyAverageByMonth, epsilon, lastMonthGrowth } from './monthly-growth';
import { money } from './window';

const minGrowth = 0.25;
/** Egress must outgrow compute by this many points: traffic growing with the fleet is expected. */
const minLead = 0.2;

/** Data transfer cost of a connection growing faster than its compute. */
export const egressOutpacingCompute = defineRule({
  id: 'network-egress-outpacing-compute',
  severity: 'medium',
  category: 'network',
  title: 'Data transfer growing faster than compute',
  description:
    "The daily cost of a connection's data transfer (usage priced per GB) grew month over month by 25% or more, at least 20 points faster than its compute.",
  recommendation:
    'Find the new traffic (cross-region or internet egress, NAT gateways); keep traffic in one region or zone, add a CDN or VPC endpoints.',
  needs:
    'At least 7 days of data in each of two consecutive calendar months; usage priced per GB outside storage services.',
  savings: 'none: the growth is stated, not a saving.',
  neverFlags: 'Egress growing with compute (less than 20 points faster); a single month of data.',
  project(data, { currency }) {
    return [...byConnection(data.daily)].flatMap(([connectionId, rows]) => {
      const egress = lastMonthGrowth(dailyAverageByMonth(rows, (row) => row.dataTransferCost));
      if (!egress || egress.growth < minGrowth - epsilon) return [];
      const compute = lastMonthGrowth(
        dailyAverageByMonth(
          rows.filter((row) => row.serviceCategory === 'Compute'),
          (row) => row.effectiveCost - row.dataTransferCost,
        ),
      );
      const computeGrowth = compute?.growth ?? 0;
      if (egress.growth - computeGrowth < minLead - epsilon) return [];
      return [
        {
          ruleId: this.id,
          resourceId: connectionId,
          resourceType: 'connection',
          severity: this.severity,
          title: this.title,
          description: `Data transfer cost ${money(egress.after)} ${currency} a day in ${egress.to}, +${(egress.growth * 100).toFixed(0)}% over ${egress.from}, while compute changed ${(computeGrowth * 100).toFixed(0)}%.`,
          recommendation: this.recommendation,
          currency,
        },
      ];
    });
  },
});

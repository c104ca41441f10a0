import { describe, expect, it } from 'vitest';
import { allRules } from '../../src/rules/catalogue';
import { rankSavings } from '../../src/rules/rank';
import type { DailyServiceCost, RuleResult, ScanData, ScanResource } from '../../src/rules/types';
import { context, dailyRows, data, jitter, resource, totals } from './fixtures';

/*
 * The whole catalogue, ranked as a scan ranks it, over one month (September 2024) of a small account
 * written as a FOCUS export would sum up: each case adds what it is about to the same steady base, and
 * the table says every finding expected (rule and resource) with its savings, computed from the case.
 */

const month = 30.44;
const cents = (amount: number) => Math.round(amount * 100) / 100;
const ec2 = { serviceName: 'Amazon Elastic Compute Cloud', serviceCategory: 'Compute' };
const s3 = { serviceName: 'Amazon Simple Storage Service', serviceCategory: 'Storage' };

/** A production instance at a discount (no commitment advice), tagged, every hour of September. */
const web = resource({
  resourceId: 'i-web',
  tags: { environment: 'production' },
  effectiveCost: 30 * 96,
  listCost: 30 * 120,
  billedCost: 30 * 96,
});
const bucket = resource({
  resourceId: 'orders-archive',
  ...s3,
  pricingUnit: 'GB-Mo',
  consumedUnit: 'GB-Mo',
  tags: { environment: 'production' },
  effectiveCost: 30 * 20,
  listCost: 30 * 20,
});
const base: DailyServiceCost[] = [
  ...dailyRows('2024-09-01', 30, (day) => 96 * jitter(day), undefined, ec2),
  ...dailyRows('2024-09-01', 30, (day) => 20 * jitter(day, 2), undefined, s3),
];

interface Case {
  name: string;
  resources?: ScanResource[];
  daily?: DailyServiceCost[];
  /** Charges that cannot carry tags (tax, credit, purchase) in the connection's totals. */
  untaggable?: number;
  /** `ruleId resourceId` -> savings (undefined: the finding carries none). */
  expected: Record<string, number | undefined>;
}

const cases: Case[] = [
  { name: 'one month of steady usage with a few percent of jitter', expected: {} },
  {
    name: 'a recurring support fee of 1000 booked on the 1st for the whole month',
    resources: [
      resource({
        resourceId: 'support-plan',
        serviceName: 'AWS Support (Business)',
        serviceCategory: 'Management and Governance',
        pricingUnit: 'Months',
        consumedUnit: 'Months',
        pricingQuantity: 1,
        tags: { environment: 'production' },
        effectiveCost: 1000,
        listCost: 1000,
      }),
    ],
    daily: dailyRows(
      '2024-09-01',
      1,
      () => 0,
      () => 1000,
      {
        serviceName: 'AWS Support (Business)',
        serviceCategory: 'Management and Governance',
      },
    ),
    expected: {},
  },
  {
    name: 'a new service starting on 16 September at 300 a day on demand',
    resources: [
      resource({
        resourceId: 'i-batch',
        tags: { environment: 'production' },
        firstSeen: '2024-09-16T00:00:00.000Z',
        hoursSeen: 360,
        pricingQuantity: 360,
        effectiveCost: 15 * 300,
        listCost: 15 * 300,
      }),
    ],
    daily: dailyRows('2024-09-16', 15, (day) => 300 * jitter(day, 3), undefined, {
      serviceName: 'Amazon EMR',
      serviceCategory: 'Analytics',
    }),
    // Steady for its 15 days at list price: too few days for a one-year commitment (a full month needed).
    expected: {},
  },
  {
    name: 'tax of 560 on the last day and a credit of 800 mid-month',
    daily: dailyRows(
      '2024-09-01',
      30,
      () => 0,
      (day) => (day === 29 ? 560 : day === 15 ? -800 : 0),
      { serviceName: 'Tax', serviceCategory: '' },
    ),
    untaggable: 560 - 800,
    expected: {},
  },
  {
    name: 'a one-time purchase of 5000 on 20 September',
    resources: [
      resource({
        resourceId: 'ri-upfront',
        chargeCategory: 'Purchase',
        pricingUnit: '',
        consumedUnit: '',
        pricingQuantity: 1,
        hoursSeen: 24,
        firstSeen: '2024-09-20T00:00:00.000Z',
        lastSeen: '2024-09-21T00:00:00.000Z',
        effectiveCost: 5000,
        listCost: 5000,
      }),
    ],
    daily: dailyRows(
      '2024-09-20',
      1,
      () => 0,
      () => 5000,
      ec2,
    ),
    untaggable: 5000,
    expected: {},
  },
  {
    name: 'a genuine single-day spike of 900 more EC2 usage on 27 September',
    daily: dailyRows('2024-09-27', 1, () => 900, undefined, ec2),
    expected: {
      'spend-daily-anomaly con_a': undefined,
      'spend-service-anomaly con_a/Amazon Elastic Compute Cloud': undefined,
    },
  },
  {
    name: 'a dev machine on demand every hour: schedule it, committing is the alternative',
    resources: [
      resource({
        resourceId: 'i-dev',
        tags: { environment: 'dev' },
        effectiveCost: 30 * 4,
        listCost: 30 * 4,
      }),
    ],
    expected: {
      'compute-nonprod-always-on i-dev': cents(4 * month * (1 - 60 / 168)),
      'commitments-steady-on-demand i-dev': undefined,
    },
  },
];

function scanOf({ resources = [], daily = [], untaggable = 0 }: Case): {
  scan: ScanData;
  results: RuleResult[];
} {
  const all = [web, bucket, ...resources];
  const allDaily = [...base, ...daily];
  const total = allDaily.reduce((sum, row) => sum + row.effectiveCost, 0);
  const scan = data({
    resources: all,
    daily: allDaily,
    totals: [totals({ effectiveCost: total, untaggableCategoryCost: untaggable, resources: all.length })],
  });
  return {
    scan,
    results: rankSavings(
      allRules.flatMap((rule) => rule.evaluate(scan, context())),
      scan,
    ),
  };
}

describe('the whole catalogue over one month of realistic series', () => {
  it.each(cases)('$name', (testCase) => {
    const { scan, results } = scanOf(testCase);
    expect(
      Object.fromEntries(results.map((r) => [`${r.ruleId} ${r.resourceId}`, r.estimatedMonthlySavings])),
    ).toEqual(testCase.expected);
    // No resource is promised more than it costs a month (its cost per day seen, times 30.44).
    for (const r of scan.resources) {
      const days = (Date.parse(r.lastSeen) - Date.parse(r.firstSeen)) / 86_400_000;
      const promised = results
        .filter((result) => result.resourceId === r.resourceId)
        .reduce((sum, result) => sum + (result.estimatedMonthlySavings ?? 0), 0);
      expect(promised, r.resourceId).toBeLessThanOrEqual((r.effectiveCost / days) * month + 0.005);
    }
  });
});

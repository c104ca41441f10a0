import { describe, expect, it } from 'vitest';
import { allRules } from '../../src/rules/catalogue';
import { rankSavings } from '../../src/rules/rank';
import type { ScanData, ScanResource } from '../../src/rules/types';
import { context, data, resource } from './fixtures';

/** Every rule of the catalogue, then the ranking, as a scan runs them. */
const scan = (scanData: ScanData) =>
  rankSavings(
    allRules.flatMap((rule) => rule.evaluate(scanData, context())),
    scanData,
  );

// A dev t2 instance costing 66.7 a month, on demand every hour of one month (30 days):
// schedule (64%), commit (30%) and modernise (10%, estimate) all apply to it.
const devT2 = resource({
  resourceId: 'i-dev',
  tags: { environment: 'dev' },
  chargeDescription: '$0.0913 per On Demand Linux t2.large Instance Hour',
  effectiveCost: (66.7 / 30.44) * 30,
  listCost: (66.7 / 30.44) * 30,
});

const fixtures: { name: string; resources: ScanResource[] }[] = [
  { name: 'a dev t2 instance always on, on demand', resources: [devT2] },
  {
    name: 'an RDS instance on extended support, always on in staging, on demand',
    resources: [
      resource({
        resourceId: 'db-1',
        serviceCategory: 'Compute',
        tags: { env: 'staging' },
        chargeDescription: 'USD 0.10 per hour per vCPU running RDS Extended Support for MySQL 5.7',
        effectiveCost: 300,
        listCost: 300,
      }),
    ],
  },
  {
    name: 'an idle address that is also an old family (contrived)',
    resources: [
      resource({
        resourceId: 'eip-1',
        chargeDescription: 'Idle public IPv4 address m4.large',
        effectiveCost: 3.6,
      }),
    ],
  },
  {
    name: 'a gp2 volume seen for ten days',
    resources: [
      resource({
        resourceId: 'vol-1',
        serviceCategory: 'Storage',
        pricingUnit: 'GB-Mo',
        consumedUnit: 'GB-Mo',
        chargeDescription: '$0.10 per GB-month of General Purpose SSD (gp2) provisioned storage',
        effectiveCost: 40,
        firstSeen: '2024-09-21T00:00:00.000Z',
      }),
    ],
  },
];

/** A resource's cost per month, measured here from its fixture: cost per day seen, times 30.44. */
const monthlyCost = (r: ScanResource) =>
  (r.effectiveCost / ((Date.parse(r.lastSeen) - Date.parse(r.firstSeen)) / 86_400_000)) * 30.44;

describe('ranking exclusive recommendations', () => {
  it.each(fixtures)('$name: savings never exceed the monthly cost', ({ resources }) => {
    const results = scan(data({ resources }));
    expect(results.some((r) => (r.estimatedMonthlySavings ?? 0) > 0)).toBe(true);
    for (const r of resources) {
      const promised = results
        .filter((result) => result.resourceId === r.resourceId)
        .reduce((sum, result) => sum + (result.estimatedMonthlySavings ?? 0), 0);
      expect(promised).toBeLessThanOrEqual(monthlyCost(r) + 0.005);
    }
  });

  it('lets the best of schedule, commit and modernise carry the savings; the others are alternatives', () => {
    const results = scan(data({ resources: [devT2] }));
    const byRule = new Map(results.map((r) => [r.ruleId, r]));
    expect([...byRule.keys()].sort()).toEqual([
      'commitments-steady-on-demand',
      'compute-nonprod-always-on',
      'compute-previous-generation',
    ]);
    // Scheduling 60 of 168 hours a week saves 64% of 66.7.
    expect(byRule.get('compute-nonprod-always-on')!.estimatedMonthlySavings).toBeCloseTo(
      66.7 * (1 - 60 / 168),
      2,
    );
    for (const ruleId of ['commitments-steady-on-demand', 'compute-previous-generation']) {
      const alternative = byRule.get(ruleId)!;
      expect(alternative.estimatedMonthlySavings).toBeUndefined();
      expect(alternative.projectedFromDays).toBeUndefined();
      expect(alternative.description).toContain(
        'Alternative to "Non-production resource runs around the clock"',
      );
    }
  });

  it('caps additive savings at what is left of the cost', () => {
    const results = scan(data({ resources: fixtures[1]!.resources }));
    const schedule = results.find((r) => r.ruleId === 'compute-nonprod-always-on')!;
    const upgrade = results.find((r) => r.ruleId === 'spend-extended-support')!;
    const cost = (300 / 30) * 30.44;
    expect(schedule.estimatedMonthlySavings).toBeCloseTo(cost * (1 - 60 / 168), 2);
    expect(upgrade.estimatedMonthlySavings).toBeCloseTo(cost - schedule.estimatedMonthlySavings!, 1);
    expect(upgrade.description).toContain('Capped at');
  });

  it('leaves findings about connections, services and commitments alone', () => {
    const results = [
      {
        ruleId: 'spend-daily-anomaly',
        resourceId: 'con_a',
        resourceType: 'connection',
        severity: 'low' as const,
        title: 't',
        description: 'd',
        recommendation: 'r',
        currency: 'USD',
      },
    ];
    expect(rankSavings(results, data())).toEqual(results);
  });

  it.each([
    { name: 'billed to the end of the data', lastSeen: '2024-10-01', gone: false },
    { name: 'last billed two days before the end', lastSeen: '2024-09-29', gone: false },
    { name: 'last billed on 12 September (released)', lastSeen: '2024-09-13', gone: true },
  ])('an idle address $name', ({ lastSeen, gone }) => {
    const address = resource({
      resourceId: 'eip-1',
      chargeDescription: 'Idle public IPv4 address',
      effectiveCost: 1.44,
      lastSeen: `${lastSeen}T00:00:00.000Z`,
    });
    const [result] = scan(data({ resources: [address] }));
    if (!gone) {
      expect(result!.estimatedMonthlySavings).toBeGreaterThan(0);
      expect(result!.description).not.toContain('Last billed');
      return;
    }
    expect(result!.estimatedMonthlySavings).toBeUndefined();
    expect(result!.projectedFromDays).toBeUndefined();
    expect(result!.description).toContain(
      'Last billed on 2024-09-12, 18 days before the data ends: if it is gone, nothing is left to save.',
    );
  });
});

import { describe, expect, it } from 'vitest';
import { allRules } from '../../src/rules/catalogue';
import { rankSavings } from '../../src/rules/rank';
import type { RuleResult, ScanData, ScanResource } from '../../src/rules/types';
import { context, data, resource, totals } from './fixtures';

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

  it.each(fixtures)(
    '$name: no rule on its own, before ranking and capping, promises more than the cost',
    ({ resources }) => {
      const raw = allRules.flatMap((rule) => rule.evaluate(data({ resources }), context()));
      for (const r of resources)
        for (const result of raw.filter((found) => found.resourceId === r.resourceId))
          expect(result.estimatedMonthlySavings ?? 0, result.ruleId).toBeLessThanOrEqual(
            monthlyCost(r) + 0.005,
          );
    },
  );

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
    { name: 'last billed three days before the end', lastSeen: '2024-09-28', gone: false },
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
      "Last billed on 2024-09-12, 18 days before its connection's data ends: it looks released or deleted",
    );
  });

  // A mid-month export: usage to the 15th (the connection's data end, from its usage-based rows), its
  // tax and support rows dated to 1 October, so the data as a whole ends on 1 October.
  const midMonth = (connectionId: string, through: string) =>
    resource({
      connectionId,
      resourceId: `eip-${connectionId}`,
      chargeDescription: 'Idle public IPv4 address',
      effectiveCost: 0.12 * 15,
      firstSeen: '2024-09-01T00:00:00.000Z',
      lastSeen: `${through}T00:00:00.000Z`,
    });
  const findingOf = (results: RuleResult[], resourceId: string) =>
    results.find((r) => r.resourceId === resourceId && r.ruleId === 'network-idle-public-ip')!;

  it("judges a mid-month export against its own data end, not its tax rows' end", () => {
    const resources = [midMonth('con_a', '2024-09-16')];
    const withEnd = data({
      resources,
      dataEnd: '2024-10-01T00:00:00.000Z',
      totals: [totals({ connectionId: 'con_a', dataEnd: '2024-09-16T00:00:00.000Z' })],
    });
    const result = findingOf(scan(withEnd), 'eip-con_a');
    expect(result.estimatedMonthlySavings).toBeCloseTo((0.12 * 15 * 30.44) / 15, 2);
    expect(result.description).not.toContain('Last billed');
  });

  it('judges each connection against its own data end when their exports lag differently', () => {
    // con_a's export runs to the 16th, con_b's to the 30th; both bill an address to the 16th.
    const scanData = data({
      resources: [midMonth('con_a', '2024-09-16'), midMonth('con_b', '2024-09-16')],
      totals: [
        totals({ connectionId: 'con_a', dataEnd: '2024-09-16T00:00:00.000Z' }),
        totals({ connectionId: 'con_b', dataEnd: '2024-09-30T00:00:00.000Z' }),
      ],
    });
    // And a commitment of each, partly unused, named to the 16th.
    const commitment = (connectionId: string) => ({
      connectionId,
      commitmentDiscountId: `sp-${connectionId}`,
      commitmentDiscountType: 'Savings Plan',
      usedCost: 70,
      unusedCost: 30,
      firstSeen: '2024-09-01T00:00:00.000Z',
      lastSeen: '2024-09-16T00:00:00.000Z',
    });
    scanData.commitments = [commitment('con_a'), commitment('con_b')];
    const results = scan(scanData);
    expect(findingOf(results, 'eip-con_a').estimatedMonthlySavings).toBeGreaterThan(0);
    const gone = findingOf(results, 'eip-con_b');
    expect(gone.estimatedMonthlySavings).toBeUndefined();
    expect(gone.description).toContain('Last billed on 2024-09-15, 14 days before');
    const plan = (id: string) =>
      results.find((r) => r.resourceId === id && r.ruleId === 'commitments-unused')!;
    expect(plan('sp-con_a')).toMatchObject({ severity: 'high', estimatedMonthlySavings: expect.any(Number) });
    // Gone: one severity lower, no savings.
    expect(plan('sp-con_b').severity).toBe('medium');
    expect(plan('sp-con_b').estimatedMonthlySavings).toBeUndefined();
  });

  it("caps a connection's data end at now: a future-dated row makes nothing gone", () => {
    const scanData = data({
      resources: [midMonth('con_a', '2024-09-16')],
      totals: [totals({ connectionId: 'con_a', dataEnd: '2025-06-01T00:00:00.000Z' })],
    });
    const results = rankSavings(
      allRules.flatMap((rule) => rule.evaluate(scanData, context())),
      scanData,
      new Date('2024-09-17T00:00:00.000Z'),
    );
    expect(findingOf(results, 'eip-con_a').estimatedMonthlySavings).toBeGreaterThan(0);
  });
});

import { describe, expect, it } from 'vitest';
import { steadyOnDemand } from '../../src/rules/steady-on-demand';
import { context, data, resource } from './fixtures';

describe('commitments-steady-on-demand', () => {
  it.each([
    { name: 'on demand every hour', overrides: {}, found: true },
    { name: 'at 80% of the hours', overrides: { hoursSeen: 576 }, found: true },
    { name: 'under 80% of the hours', overrides: { hoursSeen: 575 }, found: false },
    {
      name: 'already discounted (effective under 98% of list)',
      overrides: { effectiveCost: 97, listCost: 100 },
      found: false,
    },
    { name: 'no list cost known', overrides: { listCost: null }, found: false },
    { name: 'not compute', overrides: { serviceCategory: 'Databases' }, found: false },
    {
      name: 'not billed by the hour',
      overrides: { pricingUnit: 'Requests', consumedUnit: 'Requests' },
      found: false,
    },
    {
      name: 'too small to commit (under 10 a month)',
      overrides: { effectiveCost: 9, listCost: 9, billedCost: 9 },
      found: false,
    },
  ])('$name', ({ overrides, found }) => {
    const results = steadyOnDemand.evaluate(data({ resources: [resource(overrides)] }), context());
    expect(results).toHaveLength(found ? 1 : 0);
  });

  it('estimates 30% of the monthly cost', () => {
    const [result] = steadyOnDemand.evaluate(
      data({ resources: [resource({ effectiveCost: 600, listCost: 600 })] }),
      context(),
    );
    // 600 over 30 days is 608.8 a month.
    expect(result!.estimatedMonthlySavings).toBe(182.64);
    expect(result!.severity).toBe('medium');
  });

  // One month of data (the fixtures' September); savings are the cost per day from first to last seen
  // times 30.44, times the share saved.
  it.each([
    {
      name: 'one month, every hour',
      firstSeen: '2024-09-01',
      hours: 720,
      quantity: 720,
      cost: 300,
      days: 30,
    },
    {
      name: 'created on 3 September, every hour since: 28 days, a full month',
      firstSeen: '2024-09-03',
      hours: 672,
      quantity: 672,
      cost: 280,
      days: 28,
    },
    {
      name: 'created on 4 September: 27 days are too few for a one-year commitment',
      firstSeen: '2024-09-04',
      hours: 648,
      quantity: 648,
      cost: 270,
      days: undefined,
    },
    {
      name: 'created on 11 September: 20 days are too few',
      firstSeen: '2024-09-11',
      hours: 480,
      quantity: 480,
      cost: 200,
      days: undefined,
    },
    {
      name: 'a daily export whose charges bill 12 of 24 hours a day',
      firstSeen: '2024-09-01',
      hours: 720,
      quantity: 360,
      cost: 150,
      days: undefined,
    },
  ])('$name', ({ firstSeen, hours, quantity, cost, days }) => {
    const results = steadyOnDemand.evaluate(
      data({
        resources: [
          resource({
            firstSeen: `${firstSeen}T00:00:00.000Z`,
            hoursSeen: hours,
            pricingQuantity: quantity,
            effectiveCost: cost,
            listCost: cost,
          }),
        ],
      }),
      context(),
    );
    expect(results).toHaveLength(days === undefined ? 0 : 1);
    if (days === undefined) return;
    expect(results[0]!.estimatedMonthlySavings).toBe(Math.round((cost / days) * 30.44 * 0.3 * 100) / 100);
    expect(results[0]!.projectedFromDays).toBe(days);
  });

  // A savings plan of the connection named over the fixtures' 30 days, `unused` of it billed Unused.
  const plan = (unused: number, connectionId = 'con_a') => ({
    connectionId,
    commitmentDiscountId: `sp-${connectionId}`,
    commitmentDiscountType: 'Compute Savings Plan',
    usedCost: 1000,
    unusedCost: unused,
    firstSeen: '2024-09-01T00:00:00.000Z',
    lastSeen: '2024-10-01T00:00:00.000Z',
  });
  const monthlyOf = (cost: number) => (cost / 30) * 30.44;

  it('says to use the existing commitment, with no savings, when its unused part absorbs the usage', () => {
    const [result] = steadyOnDemand.evaluate(
      data({ resources: [resource({ effectiveCost: 600, listCost: 600 })], commitments: [plan(900)] }),
      context(),
    );
    expect(result!.estimatedMonthlySavings).toBeUndefined();
    expect(result!.projectedFromDays).toBeUndefined();
    expect(result!.recommendation).toContain('Use the existing commitment');
    expect(result!.description).toContain(
      `leave ${Math.round(monthlyOf(900) * 100) / 100} USD a month unused`,
    );
  });

  it('carries only the savings beyond the unused amount, handed out costliest first', () => {
    // 300 a month unused (over 30 days); two steady machines of 608.8 and 304.4 a month.
    const results = steadyOnDemand.evaluate(
      data({
        resources: [
          resource({ resourceId: 'i-small', effectiveCost: 300, listCost: 300 }),
          resource({ resourceId: 'i-big', effectiveCost: 600, listCost: 600 }),
        ],
        commitments: [plan(300)],
      }),
      context(),
    );
    const byId = new Map(results.map((r) => [r.resourceId, r]));
    const big = byId.get('i-big')!;
    expect(big.estimatedMonthlySavings).toBeCloseTo((monthlyOf(600) - monthlyOf(300)) * 0.3, 2);
    expect(big.recommendation).toContain('Use the existing commitment first');
    // The unused part went to the costlier one: the smaller gets the full 30%.
    expect(byId.get('i-small')!.estimatedMonthlySavings).toBeCloseTo(monthlyOf(300) * 0.3, 2);
    // Together they never count the unused commitment's money: 30% of what it cannot absorb.
    const total = results.reduce((sum, r) => sum + (r.estimatedMonthlySavings ?? 0), 0);
    expect(total).toBeCloseTo((monthlyOf(900) - monthlyOf(300)) * 0.3, 1);
  });

  it("ignores another connection's unused commitment and an expired one", () => {
    const expired = { ...plan(900), lastSeen: '2024-09-10T00:00:00.000Z' };
    for (const commitments of [[plan(900, 'con_b')], [expired]]) {
      const [result] = steadyOnDemand.evaluate(
        data({ resources: [resource({ effectiveCost: 600, listCost: 600 })], commitments }),
        context(),
      );
      expect(result!.estimatedMonthlySavings).toBe(182.64);
      expect(result!.recommendation).toContain('Buy a commitment');
    }
  });
});

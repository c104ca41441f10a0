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
      name: 'created on 11 September, every hour since',
      firstSeen: '2024-09-11',
      hours: 480,
      quantity: 480,
      cost: 200,
      days: 20,
    },
    {
      name: 'created on 21 September: 10 days are too few to judge',
      firstSeen: '2024-09-21',
      hours: 240,
      quantity: 240,
      cost: 100,
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
});

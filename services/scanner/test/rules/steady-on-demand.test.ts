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
});

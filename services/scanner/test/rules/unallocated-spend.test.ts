import { describe, expect, it } from 'vitest';
import { unallocatedSpend } from '../../src/rules/unallocated-spend';
import { context, data, totals } from './fixtures';

describe('spend-unallocated-share', () => {
  it.each([
    { name: 'no untagged spend', effective: 1000, untagged: 0, severity: undefined },
    { name: 'just under 10%', effective: 1000, untagged: 99.99, severity: undefined },
    { name: 'exactly 10%', effective: 1000, untagged: 100, severity: 'medium' },
    { name: '29%', effective: 1000, untagged: 290, severity: 'medium' },
    { name: '30% and more is high', effective: 1000, untagged: 300, severity: 'high' },
    { name: 'no spend at all', effective: 0, untagged: 0, severity: undefined },
  ])('$name', ({ effective, untagged, severity }) => {
    const results = unallocatedSpend.evaluate(
      data({ totals: [totals({ effectiveCost: effective, untaggedCost: untagged })] }),
      context(),
    );
    expect(results.map((r) => r.severity)).toEqual(severity ? [severity] : []);
    if (severity) expect(results[0]).toMatchObject({ resourceId: 'con_a', resourceType: 'connection' });
  });

  it('states the share and the amounts', () => {
    const [result] = unallocatedSpend.evaluate(
      data({ totals: [totals({ effectiveCost: 200, untaggedCost: 50 })] }),
      context({ currency: 'EUR' }),
    );
    expect(result!.description).toBe(
      "25.0% of the connection's taggable spend (50 of 200 EUR) carries no tags.",
    );
    expect(result!.currency).toBe('EUR');
  });

  // A month of one connection as an export has it: the shares are worked out here from the rows.
  interface Line {
    cost: number;
    category: 'Usage' | 'Tax' | 'Credit' | 'Purchase' | 'Adjustment';
    resource: boolean;
    tagged: boolean;
  }
  const cannotCarryTags = (line: Line) => line.category !== 'Usage' || !line.resource;
  const totalsOf = (lines: Line[]) => {
    const add = (keep: (line: Line) => boolean) =>
      lines.filter(keep).reduce((sum, line) => sum + line.cost, 0);
    return totals({
      effectiveCost: add(() => true),
      untaggedCost: add((line) => !cannotCarryTags(line) && !line.tagged),
      unattributedCost: add((line) => line.category === 'Usage' && !line.resource),
      untaggableCategoryCost: add((line) => line.category !== 'Usage'),
    });
  };
  const usage = (cost: number, tagged: boolean): Line => ({
    cost,
    category: 'Usage',
    resource: true,
    tagged,
  });
  const export1 = [
    usage(880, true),
    usage(12, false), // the only untagged resource
    { cost: 60, category: 'Usage', resource: false, tagged: false }, // support fee
    { cost: 70, category: 'Tax', resource: false, tagged: false },
    { cost: 40, category: 'Purchase', resource: false, tagged: false },
    { cost: -30, category: 'Credit', resource: false, tagged: false },
    { cost: 5, category: 'Adjustment', resource: true, tagged: false },
  ] satisfies Line[];

  it('leaves tax, fees without a resource, purchases, credits and adjustments out of the share, and says how much', () => {
    const taggable = export1.filter((line) => !cannotCarryTags(line));
    const untagged = taggable.filter((line) => !line.tagged).reduce((sum, line) => sum + line.cost, 0);
    const whole = taggable.reduce((sum, line) => sum + line.cost, 0);
    // Every row without tags over all the spend is above 10 %; the untagged resource over the taggable
    // spend, 1.3 %: nothing to report.
    const all = export1.reduce((sum, line) => sum + line.cost, 0);
    const noTags = export1.filter((line) => !line.tagged).reduce((sum, line) => sum + line.cost, 0);
    expect(noTags / all).toBeGreaterThan(0.1);
    expect(untagged / whole).toBeLessThan(0.1);
    expect(unallocatedSpend.evaluate(data({ totals: [totalsOf(export1)] }), context())).toEqual([]);

    const worse = [...export1, usage(200, false)];
    const [result] = unallocatedSpend.evaluate(data({ totals: [totalsOf(worse)] }), context());
    const share = (untagged + 200) / (whole + 200);
    const noResource = 60;
    const byCategory = 70 + 40 - 30 + 5;
    expect(result!.description).toBe(
      `${(share * 100).toFixed(1)}% of the connection's taggable spend (${untagged + 200} of ${whole + 200} USD) carries no tags. ` +
        `Left out as they cannot carry tags: ${noResource} USD of charges without a resource id and ${byCategory} USD (net) of tax, credit, purchase and adjustment charges.`,
    );
  });

  it('says nothing of a connection whose spend cannot carry tags at all', () => {
    const untaggableOnly = export1.filter(cannotCarryTags);
    expect(unallocatedSpend.evaluate(data({ totals: [totalsOf(untaggableOnly)] }), context())).toEqual([]);
  });
});

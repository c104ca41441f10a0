import { describe, expect, it } from 'vitest';
import { unattributedSpend } from '../../src/rules/unattributed-spend';
import { context, data, totals } from './fixtures';

describe('spend-unattributed-share', () => {
  it.each([
    { name: 'all spend has resources', unattributed: 0, found: 0 },
    { name: '19.9%', unattributed: 199, found: 0 },
    { name: '20%', unattributed: 200, found: 1 },
    { name: 'all of it', unattributed: 1000, found: 1 },
  ])('$name', ({ unattributed, found }) => {
    const results = unattributedSpend.evaluate(
      data({
        totals: [
          totals({ effectiveCost: 1000, unattributedCost: unattributed }),
          totals({ connectionId: 'con_b' }),
        ],
      }),
      context(),
    );
    expect(results).toHaveLength(found);
    if (found) expect(results[0]).toMatchObject({ resourceId: 'con_a', severity: 'low' });
  });

  it('leaves tax, credits, purchases and adjustments out of the share, and says how much', () => {
    // A support fee without a resource, beside usage of resources and charges of no resource by nature.
    const usage = 700;
    const support = 190;
    const byCategory = { tax: 80, purchase: 60, credit: -20, adjustment: 5 };
    const leftOut = Object.values(byCategory).reduce((sum, cost) => sum + cost, 0);
    const totalsOfMonth = totals({
      effectiveCost: usage + support + leftOut,
      unattributedCost: support,
      untaggableCategoryCost: leftOut,
    });
    // Over all the spend the fee is under 20 %; over the spend a resource could own, above.
    expect(support / (usage + support + leftOut)).toBeLessThan(0.2);
    const share = support / (usage + support);
    expect(share).toBeGreaterThanOrEqual(0.2);
    const [result] = unattributedSpend.evaluate(data({ totals: [totalsOfMonth] }), context());
    expect(result!.description).toBe(
      `${(share * 100).toFixed(1)}% of the connection's spend (${support} of ${usage + support} USD) has no resource id. ` +
        `Left out: ${leftOut} USD (net) of tax, credit, purchase and adjustment charges.`,
    );
  });
});

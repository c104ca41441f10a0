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
    expect(result!.description).toBe("25.0% of the connection's spend (50 of 200 EUR) carries no tags.");
    expect(result!.currency).toBe('EUR');
  });
});

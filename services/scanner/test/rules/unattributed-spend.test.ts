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
});

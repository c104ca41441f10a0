import { describe, expect, it } from 'vitest';
import { newCostlyResource } from '../../src/rules/new-costly-resource';
import { context, data, resource, totals } from './fixtures';

describe('spend-new-costly-resource', () => {
  it.each([
    { name: 'old resource', firstSeen: '2024-09-01T00:00:00.000Z', cost: 1000, found: false },
    { name: 'new, 5 days at 20 a day', firstSeen: '2024-09-26T00:00:00.000Z', cost: 100, found: true },
    {
      name: 'new, 5 days at 3 a day (under 100 a month)',
      firstSeen: '2024-09-26T00:00:00.000Z',
      cost: 15,
      found: false,
    },
    {
      name: 'first seen 8 days before the end',
      firstSeen: '2024-09-23T00:00:00.000Z',
      cost: 1000,
      found: false,
    },
    {
      name: 'new but small against a large bill (under 5%)',
      firstSeen: '2024-09-26T00:00:00.000Z',
      cost: 100,
      bill: 100_000,
      found: false,
    },
  ])('$name', ({ firstSeen, cost, found, bill }) => {
    const results = newCostlyResource.evaluate(
      data({
        resources: [resource({ firstSeen, effectiveCost: cost })],
        totals: [totals({ effectiveCost: bill ?? 1000 })],
      }),
      context(),
    );
    expect(results).toHaveLength(found ? 1 : 0);
  });

  it('needs a window longer than two weeks to tell new from old', () => {
    const results = newCostlyResource.evaluate(
      data({
        windowStart: '2024-09-20T00:00:00.000Z',
        resources: [resource({ firstSeen: '2024-09-26T00:00:00.000Z', effectiveCost: 1000 })],
      }),
      context(),
    );
    expect(results).toEqual([]);
  });
});

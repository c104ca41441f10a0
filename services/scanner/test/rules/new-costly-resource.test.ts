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
        resources: [resource({ firstSeen, effectiveCost: cost, daysSeen: 5 })],
        totals: [totals({ effectiveCost: bill ?? 1000 })],
      }),
      context(),
    );
    expect(results).toHaveLength(found ? 1 : 0);
  });

  it('needs more than two weeks of data to tell new from old', () => {
    const results = newCostlyResource.evaluate(
      data({
        dataStart: '2024-09-20T00:00:00.000Z',
        resources: [resource({ firstSeen: '2024-09-26T00:00:00.000Z', effectiveCost: 1000 })],
      }),
      context(),
    );
    expect(results).toEqual([]);
  });

  it.each([
    {
      name: 'one day of 83.92 is not projected to a month',
      daysSeen: 1,
      chargeCategory: 'Usage',
      found: false,
    },
    { name: 'a one-time purchase is no run rate', daysSeen: 5, chargeCategory: 'Purchase', found: false },
    { name: 'three days of usage are', daysSeen: 3, chargeCategory: 'Usage', found: true },
  ])('$name', ({ daysSeen, chargeCategory, found }) => {
    const firstSeen = '2024-09-28T00:00:00.000Z';
    const results = newCostlyResource.evaluate(
      data({
        resources: [resource({ firstSeen, effectiveCost: 3 * 83.92, daysSeen, chargeCategory })],
        totals: [totals()],
      }),
      context(),
    );
    expect(results).toHaveLength(found ? 1 : 0);
    if (found) {
      expect(results[0]!.projectedFromDays).toBe(3);
      expect(results[0]!.description).toContain(
        `a run rate of ${Math.round(83.92 * 30.44 * 100) / 100} USD a month`,
      );
    }
  });

  it("judges new against the connection's own data end: a mid-month export's tax rows do not make it old", () => {
    // Usage to the 16th; a tax row spans the month to 1 October (the data's end as a whole).
    const resources = [
      resource({
        firstSeen: '2024-09-11T00:00:00.000Z',
        lastSeen: '2024-09-16T00:00:00.000Z',
        effectiveCost: 100,
        daysSeen: 5,
      }),
    ];
    const midMonth = (dataEnd: string) =>
      newCostlyResource.evaluate(
        data({ resources, totals: [totals({ dataEnd })], dataEnd: '2024-10-01T00:00:00.000Z' }),
        context(),
      );
    const [found] = midMonth('2024-09-16T00:00:00.000Z');
    expect(found!.projectedFromDays).toBe(5);
    expect(found!.description).toContain(`a run rate of ${Math.round((100 / 5) * 30.44 * 100) / 100} USD`);
    // The same resource when the connection's usage runs to the end of the month is no longer new.
    expect(midMonth('2024-10-01T00:00:00.000Z')).toEqual([]);
  });

  it('caps the data end at now: a future-dated row does not make a new resource old', () => {
    const results = newCostlyResource.evaluate(
      data({
        resources: [resource({ firstSeen: '2024-09-26T00:00:00.000Z', effectiveCost: 100, daysSeen: 5 })],
        totals: [totals({ dataEnd: '2025-09-30T00:00:00.000Z' })],
        dataEnd: '2025-09-30T00:00:00.000Z',
      }),
      context(),
    );
    expect(results).toHaveLength(1);
  });

  it("weighs a new resource against its connection's spend over the connection's own span", () => {
    // The connection's 60000 cover 1 to 16 September (its usage end), not the month its tax rows span:
    // 60000 / 15 days a day, 5% of which a month is 6088; a new resource at 4000 a month is under it.
    const resources = [
      resource({
        firstSeen: '2024-09-11T00:00:00.000Z',
        lastSeen: '2024-09-16T00:00:00.000Z',
        effectiveCost: (4000 / 30.44) * 5,
        daysSeen: 5,
      }),
    ];
    const results = newCostlyResource.evaluate(
      data({
        resources,
        totals: [totals({ effectiveCost: 60_000, dataEnd: '2024-09-16T00:00:00.000Z' })],
        dataEnd: '2024-10-01T00:00:00.000Z',
      }),
      context(),
    );
    expect(results).toEqual([]);
  });
});

import { describe, expect, it } from 'vitest';
import { nonProductionAlwaysOn } from '../../src/rules/nonprod-always-on';
import { context, data, resource } from './fixtures';

describe('compute-nonprod-always-on', () => {
  it.each<{ name: string; tags: Record<string, string>; hours: number; unit: string; found: boolean }>([
    { name: 'dev instance every hour', tags: { env: 'dev' }, hours: 720, unit: 'Hours', found: true },
    {
      name: 'Environment=Staging every hour',
      tags: { Environment: 'Staging' },
      hours: 700,
      unit: 'Hours',
      found: true,
    },
    { name: 'at 90% of the hours', tags: { env: 'test' }, hours: 648, unit: 'Hours', found: true },
    {
      name: 'under 90% of the hours (scheduled)',
      tags: { env: 'test' },
      hours: 647,
      unit: 'Hours',
      found: false,
    },
    { name: 'production', tags: { env: 'prod' }, hours: 720, unit: 'Hours', found: false },
    { name: 'no environment tag', tags: { team: 'a' }, hours: 720, unit: 'Hours', found: false },
    { name: 'not billed by the hour', tags: { env: 'dev' }, hours: 720, unit: 'GB-Months', found: false },
  ])('$name', ({ tags, hours, unit, found }) => {
    const results = nonProductionAlwaysOn.evaluate(
      data({
        resources: [
          resource({
            tags,
            hoursSeen: hours,
            pricingUnit: unit,
            consumedUnit: unit,
          }),
        ],
      }),
      context(),
    );
    expect(results).toHaveLength(found ? 1 : 0);
  });

  it('saves the hours outside 12 hours on weekdays, per month', () => {
    // 300 over a 30-day window is 304.4 a month; 108 of 168 weekly hours are saved.
    const [result] = nonProductionAlwaysOn.evaluate(
      data({ resources: [resource({ tags: { env: 'dev' }, effectiveCost: 300 })] }),
      context(),
    );
    expect(result!.estimatedMonthlySavings).toBe(Math.round(304.4 * (108 / 168) * 100) / 100);
    expect(result).toMatchObject({
      ruleId: 'compute-nonprod-always-on',
      resourceId: 'i-1',
      severity: 'medium',
    });
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
    const results = nonProductionAlwaysOn.evaluate(
      data({
        resources: [
          resource({
            tags: { env: 'dev' },
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
    expect(results[0]!.estimatedMonthlySavings).toBe(
      Math.round((cost / days) * 30.44 * (1 - 60 / 168) * 100) / 100,
    );
    expect(results[0]!.projectedFromDays).toBe(days);
  });
});

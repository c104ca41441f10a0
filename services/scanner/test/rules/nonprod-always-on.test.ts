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
});

import { describe, expect, it } from 'vitest';
import { extendedSupportCharges } from '../../src/rules/extended-support';
import { context, data, resource } from './fixtures';

describe('spend-extended-support', () => {
  it.each([
    {
      name: 'RDS Extended Support',
      text: 'USD 0.10 per hour per vCPU running RDS Extended Support for MySQL 5.7 in Year 1, Year 2',
      found: true,
    },
    { name: 'EKS extended support', text: 'Amazon EKS cluster usage - extended support hours', found: true },
    { name: 'a database instance', text: 'USD 0.017 per db.t3.micro instance hour', found: false },
    { name: 'a support plan', text: 'AWS Business Support', found: false },
  ])('$name', ({ text, found }) => {
    const results = extendedSupportCharges.evaluate(
      data({ resources: [resource({ chargeDescription: text })] }),
      context(),
    );
    expect(results).toHaveLength(found ? 1 : 0);
  });

  it('saves the whole surcharge, a month of it', () => {
    const [result] = extendedSupportCharges.evaluate(
      data({ resources: [resource({ chargeDescription: 'RDS Extended Support', effectiveCost: 72 })] }),
      context(),
    );
    // 72 over 30 days is 73.056 a month.
    expect(result).toMatchObject({ severity: 'high', estimatedMonthlySavings: 73.06 });
  });

  it('saves only the surcharge rows when costs singles them out, not the instance beneath', () => {
    const [result] = extendedSupportCharges.evaluate(
      data({
        resources: [
          resource({
            chargeDescription: 'RDS Extended Support',
            effectiveCost: 300,
            extendedSupportCost: 90,
          }),
        ],
      }),
      context(),
    );
    // 90 over 30 days is 91.32 a month.
    expect(result!.estimatedMonthlySavings).toBe(91.32);
    expect(result!.description).toContain('surcharge: 90 USD over 30 days, of 300 USD in all');
  });

  it('fires when the surcharge is not the costliest charge: the instance beneath costs more', () => {
    const [result] = extendedSupportCharges.evaluate(
      data({
        resources: [
          resource({
            resourceId: 'db-1',
            chargeDescription: 'USD 0.34 per db.r5.large Multi-AZ instance hour running MySQL',
            effectiveCost: 300,
            extendedSupportCost: 45,
          }),
        ],
      }),
      context(),
    );
    expect(result).toMatchObject({ resourceId: 'db-1', severity: 'high' });
    expect(result!.estimatedMonthlySavings).toBe(Math.round((45 / 30) * 30.44 * 100) / 100);
  });
});

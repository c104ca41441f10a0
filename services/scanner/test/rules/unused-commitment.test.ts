import { describe, expect, it } from 'vitest';
import { unusedCommitment } from '../../src/rules/unused-commitment';
import { context, data, resource } from './fixtures';

describe('commitments-unused', () => {
  const plan = {
    resourceId: 'sp-1',
    commitmentDiscountId: 'arn:sp-1',
    commitmentDiscountType: 'Savings Plan',
    commitmentDiscountCategory: 'Spend',
    pricingCategory: 'Committed',
  };
  it.each([
    {
      name: 'wholly unused',
      overrides: { unusedCommitmentCost: 100, commitmentDiscountStatus: 'Unused' },
      savings: 101.47,
    },
    {
      name: 'partly unused (underused)',
      overrides: { unusedCommitmentCost: 30, commitmentDiscountStatus: 'Used' },
      savings: 30.44,
    },
    {
      name: 'unused at no cost still shows',
      overrides: { unusedCommitmentCost: 0, commitmentDiscountStatus: 'Unused' },
      savings: 0,
    },
    {
      name: 'fully used',
      overrides: { unusedCommitmentCost: 0, commitmentDiscountStatus: 'Used' },
      found: false,
    },
    { name: 'no commitment', overrides: {}, found: false },
  ])('$name', ({ overrides, savings, found = true }) => {
    const results = unusedCommitment.evaluate(
      data({ resources: [resource({ ...plan, ...overrides })] }),
      context(),
    );
    expect(results).toHaveLength(found ? 1 : 0);
    if (found) expect(results[0]).toMatchObject({ resourceId: 'sp-1', estimatedMonthlySavings: savings });
  });

  it('states the unused share of the commitment', () => {
    const [result] = unusedCommitment.evaluate(
      data({ resources: [resource({ ...plan, effectiveCost: 200, unusedCommitmentCost: 50 })] }),
      context(),
    );
    expect(result!.description).toContain('25%');
    expect(result!.resourceType).toBe('Savings Plan');
  });
});

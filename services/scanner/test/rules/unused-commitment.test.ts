import { describe, expect, it } from 'vitest';
import { unusedCommitment } from '../../src/rules/unused-commitment';
import type { CommitmentUse } from '../../src/rules/types';
import { context, data, resource, windowEnd, windowStart } from './fixtures';

const plan = (overrides: Partial<CommitmentUse>): CommitmentUse => ({
  connectionId: 'con_a',
  commitmentDiscountId: 'arn:sp-1',
  commitmentDiscountType: 'Savings Plan',
  usedCost: 0,
  unusedCost: 0,
  firstSeen: windowStart,
  lastSeen: windowEnd,
  ...overrides,
});

describe('commitments-unused', () => {
  it.each([
    { name: 'wholly unused', used: 0, unused: 100, share: '100%' },
    { name: 'used at 70%', used: 70, unused: 30, share: '30%' },
    { name: 'used at 99%', used: 990, unused: 10, share: '1%' },
    { name: 'fully used', used: 100, unused: 0, share: undefined },
  ])('$name', ({ used, unused, share }) => {
    const results = unusedCommitment.evaluate(
      data({ commitments: [plan({ usedCost: used, unusedCost: unused })] }),
      context(),
    );
    expect(results).toHaveLength(share ? 1 : 0);
    if (!share) return;
    // Unused cost per covered day (30 days) times 30.44.
    expect(results[0]).toMatchObject({
      resourceId: 'arn:sp-1',
      resourceType: 'Savings Plan',
      estimatedMonthlySavings: Math.round((unused / 30) * 30.44 * 100) / 100,
      projectedFromDays: 30,
    });
    expect(results[0]!.description).toContain(`${share} unused`);
  });

  it('projects over the days the commitment was seen, not a fixed window', () => {
    const [result] = unusedCommitment.evaluate(
      data({
        commitments: [plan({ unusedCost: 50, usedCost: 50, firstSeen: '2024-09-21T00:00:00.000Z' })],
      }),
      context(),
    );
    expect(result).toMatchObject({ estimatedMonthlySavings: 152.2, projectedFromDays: 10 });
  });

  it('still reports unused rows of a commitment the data does not name', () => {
    const results = unusedCommitment.evaluate(
      data({ resources: [resource({ resourceId: 'ri-1', unusedCommitmentCost: 60 })] }),
      context(),
    );
    expect(results).toMatchObject([{ resourceId: 'ri-1', estimatedMonthlySavings: 60.88 }]);
  });
});

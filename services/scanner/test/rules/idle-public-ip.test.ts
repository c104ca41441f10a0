import { describe, expect, it } from 'vitest';
import { idlePublicIp } from '../../src/rules/idle-public-ip';
import { context, data, resource } from './fixtures';

describe('network-idle-public-ip', () => {
  it.each([
    {
      name: 'AWS idle IPv4 address',
      chargeDescription: '$0.005 per Idle public IPv4 address per hour',
      found: true,
    },
    { name: 'idle address, other wording', chargeDescription: 'Idle Elastic IP address hours', found: true },
    {
      name: 'an address in use',
      chargeDescription: '$0.005 per In-use public IPv4 address per hour',
      found: false,
    },
    {
      name: 'an instance',
      chargeDescription: '$0.0116 per On Demand Linux t3.micro Instance Hour',
      found: false,
    },
    { name: 'no description', chargeDescription: '', found: false },
  ])('$name', ({ chargeDescription, found }) => {
    const results = idlePublicIp.evaluate(data({ resources: [resource({ chargeDescription })] }), context());
    expect(results).toHaveLength(found ? 1 : 0);
  });

  it('saves the monthly cost of the address', () => {
    const [result] = idlePublicIp.evaluate(
      data({
        resources: [
          resource({
            resourceId: 'eip-1',
            chargeDescription: 'Idle public IPv4 address',
            effectiveCost: 3.6,
          }),
        ],
      }),
      context(),
    );
    // 3.6 over 30 days is 3.6528 a month.
    expect(result).toMatchObject({ resourceId: 'eip-1', severity: 'low', estimatedMonthlySavings: 3.65 });
  });

  it.each([
    { name: 'idle all month', firstSeen: '2024-09-01', lastSeen: '2024-10-01', cost: 3.6, days: 30 },
    {
      name: 'allocated on 21 September',
      firstSeen: '2024-09-21',
      lastSeen: '2024-10-01',
      cost: 1.2,
      days: 10,
    },
    { name: 'released on 6 September', firstSeen: '2024-09-01', lastSeen: '2024-09-06', cost: 0.6, days: 5 },
  ])('$name: its cost per day seen, a month of it', ({ firstSeen, lastSeen, cost, days }) => {
    const [result] = idlePublicIp.evaluate(
      data({
        resources: [
          resource({
            chargeDescription: '$0.005 per Idle public IPv4 address per hour',
            effectiveCost: cost,
            firstSeen: `${firstSeen}T00:00:00.000Z`,
            lastSeen: `${lastSeen}T00:00:00.000Z`,
          }),
        ],
      }),
      context(),
    );
    expect(result!.estimatedMonthlySavings).toBe(Math.round((cost / days) * 30.44 * 100) / 100);
    expect(result!.projectedFromDays).toBe(days);
  });
});

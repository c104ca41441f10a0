import { describe, expect, it } from 'vitest';
import { egressOutpacingCompute } from '../../src/rules/egress-outpacing-compute';
import { context, dailySeries, data } from './fixtures';

const days = (count: number, cost: number) => Array.from({ length: count }, () => cost);
const twoMonths = { windowStart: '2024-08-01T00:00:00.000Z', windowEnd: '2024-10-01T00:00:00.000Z' };

/** Compute and transfer of one connection per day, for August then September. */
function rows(compute: [number, number], transfer: [number, number]) {
  return [
    ...dailySeries('2024-08-01', [...days(31, compute[0]), ...days(30, compute[1])], { serviceName: 'EC2' }),
    ...dailySeries('2024-08-01', [...days(31, transfer[0]), ...days(30, transfer[1])], {
      serviceName: 'Data Transfer',
      serviceCategory: 'Networking',
    }).map((row) => ({ ...row, dataTransferCost: row.effectiveCost })),
  ];
}

describe('network-egress-outpacing-compute', () => {
  it.each([
    { name: 'both flat', compute: [100, 100], transfer: [10, 10], found: false },
    { name: 'transfer +50%, compute flat', compute: [100, 100], transfer: [10, 15], found: true },
    {
      name: 'transfer +50%, compute +40% (grows with the fleet)',
      compute: [100, 140],
      transfer: [10, 15],
      found: false,
    },
    { name: 'transfer +25%, compute shrinking 10%', compute: [100, 90], transfer: [10, 12.5], found: true },
    { name: 'transfer +24%', compute: [100, 80], transfer: [10, 12.4], found: false },
    { name: 'no transfer before', compute: [100, 100], transfer: [0, 15], found: false },
  ] as const)('$name', ({ compute, transfer, found }) => {
    const results = egressOutpacingCompute.evaluate(
      data({ ...twoMonths, daily: rows([...compute], [...transfer]) }),
      context(),
    );
    expect(results).toHaveLength(found ? 1 : 0);
    if (found) expect(results[0]).toMatchObject({ resourceId: 'con_a', severity: 'medium' });
  });
});

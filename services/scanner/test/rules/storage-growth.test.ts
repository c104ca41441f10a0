import { describe, expect, it } from 'vitest';
import { storageGrowth } from '../../src/rules/storage-growth';
import { context, dailySeries, data } from './fixtures';

const days = (count: number, cost: number) => Array.from({ length: count }, () => cost);
const twoMonths = { windowStart: '2024-08-01T00:00:00.000Z', windowEnd: '2024-10-01T00:00:00.000Z' };

describe('storage-growth-month-over-month', () => {
  it.each([
    { name: 'flat', august: 10, september: 10, found: false },
    { name: '+20% a day', august: 10, september: 12, found: true },
    { name: '+19%', august: 10, september: 11.9, found: false },
    { name: 'shrinking', august: 10, september: 5, found: false },
    { name: 'growing but under 10 a month more', august: 0.1, september: 0.3, found: false },
    { name: 'from nothing (no baseline)', august: 0, september: 10, found: false },
  ])('$name', ({ august, september, found }) => {
    const results = storageGrowth.evaluate(
      data({
        ...twoMonths,
        daily: dailySeries('2024-08-01', [...days(31, august), ...days(30, september)], {
          serviceCategory: 'Storage',
        }),
      }),
      context(),
    );
    expect(results).toHaveLength(found ? 1 : 0);
    if (found)
      expect(results[0]).toMatchObject({
        resourceId: 'con_a',
        resourceType: 'connection',
        severity: 'medium',
      });
  });

  it('reads storage services only, without their data transfer', () => {
    const rows = [
      ...dailySeries('2024-08-01', [...days(31, 10), ...days(30, 10)], { serviceCategory: 'Storage' }),
      // S3 egress doubling is data transfer, not storage.
      ...dailySeries('2024-08-01', [...days(31, 5), ...days(30, 20)], {
        serviceCategory: 'Storage',
        serviceName: 'S3',
        dataTransferCost: 0,
      }).map((row) => ({ ...row, dataTransferCost: row.effectiveCost })),
      // Compute doubling is not storage.
      ...dailySeries('2024-08-01', [...days(31, 50), ...days(30, 100)]),
    ];
    expect(storageGrowth.evaluate(data({ ...twoMonths, daily: rows }), context())).toEqual([]);
  });

  it('compares per day, so a short month does not hide growth', () => {
    const rows = dailySeries('2024-08-01', [...days(31, 10), ...days(10, 13)], {
      serviceCategory: 'Storage',
    });
    const [result] = storageGrowth.evaluate(data({ ...twoMonths, daily: rows }), context());
    expect(result!.description).toContain('30% more than in 2024-08');
    // The monthly increase rests on September's 10 days: (13 - 10) x 30.44.
    expect(result!.description).toContain(`(${Math.round(3 * 30.44 * 100) / 100} USD a month more)`);
    expect(result!.projectedFromDays).toBe(10);
  });
});

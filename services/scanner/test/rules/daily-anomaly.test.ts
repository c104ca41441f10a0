import { describe, expect, it } from 'vitest';
import { dailyCostAnomaly } from '../../src/rules/daily-anomaly';
import { context, dailySeries, data } from './fixtures';

const flat = (days: number, cost = 100) => Array.from({ length: days }, () => cost);

describe('spend-daily-anomaly', () => {
  it.each([
    { name: 'flat spend', costs: flat(30), day: undefined },
    { name: 'a spike on the last day', costs: [...flat(29), 400], day: '2024-09-30' },
    { name: 'a spike mid-month', costs: [...flat(14), 400, ...flat(15)], day: '2024-09-15' },
    {
      name: 'the latest of two spikes',
      costs: [...flat(10), 500, ...flat(10), 500, ...flat(8)],
      day: '2024-09-22',
    },
    { name: 'under 50% above the mean', costs: [...flat(29), 140], day: undefined },
    {
      name: 'within three deviations of a noisy baseline',
      costs: [...Array.from({ length: 29 }, (_, i) => (i % 2 ? 20 : 180)), 300],
      day: undefined,
    },
    { name: 'too small in money (under 10)', costs: [...flat(29, 1), 9], day: undefined },
    {
      name: 'a spike in the first week (no baseline yet)',
      costs: [100, 100, 900, ...flat(27)],
      day: undefined,
    },
    { name: 'missing days count as no cost', costs: [...flat(29, 0), 50], day: '2024-09-30' },
  ])('$name', ({ costs, day }) => {
    const results = dailyCostAnomaly.evaluate(data({ daily: dailySeries('2024-09-01', costs) }), context());
    expect(results).toHaveLength(day ? 1 : 0);
    if (day) {
      expect(results[0]).toMatchObject({ resourceId: 'con_a', resourceType: 'connection', severity: 'high' });
      expect(results[0]!.description).toContain(`On ${day}`);
    }
  });

  it('sums the services of a connection and judges each connection apart', () => {
    const results = dailyCostAnomaly.evaluate(
      data({
        daily: [
          ...dailySeries('2024-09-01', [...flat(29, 50), 200], { serviceName: 'EC2' }),
          ...dailySeries('2024-09-01', [...flat(29, 50), 200], { serviceName: 'S3' }),
          ...dailySeries('2024-09-01', flat(30), { connectionId: 'con_b' }),
        ],
      }),
      context(),
    );
    expect(results.map((r) => r.resourceId)).toEqual(['con_a']);
    expect(results[0]!.description).toBe(
      'On 2024-09-30 the connection spent 400 USD against a trailing average of 100 USD.',
    );
  });
});

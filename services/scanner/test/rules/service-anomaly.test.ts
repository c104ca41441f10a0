import { describe, expect, it } from 'vitest';
import { serviceCostAnomaly } from '../../src/rules/service-anomaly';
import { context, dailySeries, data } from './fixtures';

const flat = (days: number, cost = 100) => Array.from({ length: days }, () => cost);

describe('spend-service-anomaly', () => {
  it.each([
    { name: 'both services flat', ec2: flat(30), s3: flat(30), found: [] },
    { name: 'one service spikes', ec2: flat(30), s3: [...flat(29), 500], found: ['con_a/S3'] },
    { name: 'both spike', ec2: [...flat(29), 500], s3: [...flat(29), 500], found: ['con_a/EC2', 'con_a/S3'] },
    { name: 'a small service doubling by less than 10', ec2: flat(30), s3: [...flat(29, 2), 8], found: [] },
  ])('$name', ({ ec2, s3, found }) => {
    const results = serviceCostAnomaly.evaluate(
      data({
        daily: [
          ...dailySeries('2024-09-01', ec2, { serviceName: 'EC2' }),
          ...dailySeries('2024-09-01', s3, { serviceName: 'S3', serviceCategory: 'Storage' }),
        ],
      }),
      context(),
    );
    expect(results.map((r) => r.resourceId)).toEqual(found);
    for (const result of results)
      expect(result).toMatchObject({ resourceType: 'service', severity: 'medium' });
  });
});

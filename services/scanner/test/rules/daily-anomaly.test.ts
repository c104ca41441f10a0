import { describe, expect, it } from 'vitest';
import { minHistoryDays } from '../../src/rules/baseline';
import { dailyCostAnomaly } from '../../src/rules/daily-anomaly';
import { serviceCostAnomaly } from '../../src/rules/service-anomaly';
import type { DailyServiceCost } from '../../src/rules/types';
import { context, dailyRows, data, dailySeries, jitter } from './fixtures';

const ec2 = { serviceName: 'Amazon Elastic Compute Cloud', serviceCategory: 'Compute' };
const s3 = { serviceName: 'Amazon Simple Storage Service', serviceCategory: 'Storage' };
const eks = { serviceName: 'Amazon Elastic Kubernetes Service', serviceCategory: 'Compute' };

/** 200 a day of EC2 usage with a few percent of jitter, 40 of S3: the steady part of every series. */
const steady = (days: number, first = '2024-09-01'): DailyServiceCost[] => [
  ...dailyRows(first, days, (day) => 200 * jitter(day), undefined, ec2),
  ...dailyRows(first, days, (day) => 40 * jitter(day, 2), undefined, s3),
];

// Every case is one month (September 2024) unless it says otherwise; the window is the fixtures'.
// `connection`: the day the connection rule reports (undefined: none) and its severity;
// `services`: the services the service rule reports.
const cases: {
  name: string;
  daily: DailyServiceCost[];
  dataEnd?: string;
  minDailyImpact?: number;
  connection?: { day: string; severity: string };
  services?: string[];
}[] = [
  { name: 'one month of jitter of a few percent', daily: steady(30) },
  {
    name: 'a recurring fee on the 1st of each month (two months)',
    daily: [
      ...steady(61),
      // A whole month's EKS fee and a storage charge, booked on 1 September and 1 October.
      ...dailyRows(
        '2024-09-01',
        31,
        () => 0,
        (day) => (day === 0 || day === 30 ? 2400 : 0),
        eks,
      ),
      ...dailyRows(
        '2024-09-01',
        31,
        () => 0,
        (day) => (day === 0 || day === 30 ? 900 : 0),
        s3,
      ),
    ],
    dataEnd: '2024-11-01T00:00:00.000Z',
  },
  {
    name: 'a new service starting mid-window at 300 a day',
    daily: [...steady(30), ...dailyRows('2024-09-16', 15, (day) => 300 * jitter(day, 3), undefined, eks)],
  },
  {
    name: 'tax on the last day and a credit mid-month',
    daily: [
      ...steady(30),
      ...dailyRows(
        '2024-09-01',
        30,
        () => 0,
        (day) => (day === 29 ? 560 : day === 15 ? -800 : 0),
        {
          serviceName: 'Tax',
          serviceCategory: '',
        },
      ),
    ],
  },
  {
    name: 'a one-time purchase of 5000 on day 20',
    daily: [
      ...steady(30),
      ...dailyRows(
        '2024-09-20',
        1,
        () => 0,
        () => 5000,
        ec2,
      ),
    ],
  },
  {
    name: 'a genuine single-day spike of EC2 (+700)',
    daily: [...steady(30), ...dailyRows('2024-09-25', 1, () => 700, undefined, ec2)],
    connection: { day: '2024-09-25', severity: 'high' },
    services: ['con_a/Amazon Elastic Compute Cloud'],
  },
  {
    name: 'a spike of +200 (medium)',
    daily: [...steady(30), ...dailyRows('2024-09-25', 1, () => 200, undefined, ec2)],
    connection: { day: '2024-09-25', severity: 'medium' },
    services: ['con_a/Amazon Elastic Compute Cloud'],
  },
  {
    name: 'a spike of +120 (low: money and size together)',
    daily: [...steady(30), ...dailyRows('2024-09-25', 1, () => 120, undefined, ec2)],
    connection: { day: '2024-09-25', severity: 'low' },
    services: ['con_a/Amazon Elastic Compute Cloud'],
  },
  {
    name: 'a small service tripling by less than the minimum daily impact',
    daily: [...steady(30), ...dailyRows('2024-09-01', 30, (day) => (day === 27 ? 33 : 11), undefined, eks)],
  },
  {
    name: 'the same, with the team minimum lowered to 10',
    daily: [...steady(30), ...dailyRows('2024-09-01', 30, (day) => (day === 27 ? 33 : 11), undefined, eks)],
    minDailyImpact: 10,
    services: ['con_a/Amazon Elastic Kubernetes Service'],
  },
  {
    name: `a spike before ${minHistoryDays} days of history`,
    daily: [...steady(30), ...dailyRows('2024-09-10', 1, () => 2000, undefined, ec2)],
  },
  {
    name: 'data starting mid-window: days before it are not zeros',
    daily: steady(10, '2024-09-21'),
  },
  {
    name: 'a month without an upload (August, then October): its days are not zeros',
    daily: [...steady(31, '2024-08-01'), ...steady(31, '2024-10-01')],
    dataEnd: '2024-11-01T00:00:00.000Z',
  },
  {
    name: 'a spike after a month without an upload is judged against the days with data',
    daily: [
      ...steady(31, '2024-08-01'),
      ...steady(5, '2024-10-01'),
      ...dailyRows('2024-10-05', 1, () => 700, undefined, ec2),
    ],
    dataEnd: '2024-10-06T00:00:00.000Z',
    connection: { day: '2024-10-05', severity: 'high' },
    services: ['con_a/Amazon Elastic Compute Cloud'],
  },
];

describe('spend-daily-anomaly and spend-service-anomaly over realistic series', () => {
  it.each(cases)('$name', ({ daily, dataEnd, minDailyImpact, connection, services = [] }) => {
    const scan = data({ daily, ...(dataEnd ? { dataEnd, windowEnd: dataEnd } : {}) });
    const ctx = context(minDailyImpact === undefined ? {} : { minDailyImpact });
    const byConnection = dailyCostAnomaly.evaluate(scan, ctx);
    expect(byConnection.map((result) => result.description.slice(3, 13))).toEqual(
      connection ? [connection.day] : [],
    );
    if (connection) expect(byConnection[0]!.severity).toBe(connection.severity);
    const byService = serviceCostAnomaly.evaluate(scan, ctx);
    expect(byService.map((result) => result.resourceId)).toEqual(services);
    // A spike is money already spent: no rule promises savings for it.
    for (const result of [...byConnection, ...byService])
      expect(result.estimatedMonthlySavings).toBeUndefined();
  });

  it('states the measured numbers', () => {
    const costs = [...Array.from({ length: 20 }, () => 100), 400];
    const [result] = dailyCostAnomaly.evaluate(data({ daily: dailySeries('2024-09-10', costs) }), context());
    expect(result!.description).toBe(
      "On 2024-09-30 the connection's usage-based spend was 400 USD, 300 USD above its average of 100 USD over the 14 days of data before (+300%).",
    );
    expect(result).toMatchObject({ resourceId: 'con_a', resourceType: 'connection', severity: 'medium' });
  });

  it('judges each connection apart and sums its services', () => {
    const results = dailyCostAnomaly.evaluate(
      data({
        daily: [
          ...dailySeries('2024-09-01', [...Array.from({ length: 29 }, () => 50), 200], ec2),
          ...dailySeries('2024-09-01', [...Array.from({ length: 29 }, () => 50), 200], s3),
          ...dailySeries(
            '2024-09-01',
            Array.from({ length: 30 }, () => 100),
            { connectionId: 'con_b' },
          ),
        ],
      }),
      context(),
    );
    expect(results.map((r) => r.resourceId)).toEqual(['con_a']);
    expect(results[0]!.description).toContain('was 400 USD, 300 USD above its average of 100 USD');
  });
});

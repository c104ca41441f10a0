import { describe, expect, it } from 'vitest';
import { focusFile } from './focus';

const header =
  'BilledCost,EffectiveCost,BillingCurrency,BillingPeriodStart,BillingPeriodEnd,ChargePeriodStart,ChargePeriodEnd,ServiceName,ResourceId';

describe('focusFile', () => {
  it('writes one USD row per cost, charged for an hour on the first of the period', () => {
    expect(focusFile([12.5, 3], { month: '2025-03' })).toBe(
      `${header}\n` +
        '12.5,12.5,USD,2025-03-01T00:00:00Z,2025-04-01T00:00:00Z,2025-03-01T00:00:00Z,2025-03-01T01:00:00Z,EC2,i-0\n' +
        '3,3,USD,2025-03-01T00:00:00Z,2025-04-01T00:00:00Z,2025-03-01T00:00:00Z,2025-03-01T01:00:00Z,EC2,i-1\n',
    );
  });

  it('adds a Tags column, quoted as CSV, when a row has tags', () => {
    const file = focusFile([{ cost: 1, tags: { team: 'a "b"' } }, { cost: 2 }], { month: '2025-12' });
    const [head, first, second] = file.split('\n');
    expect(head).toBe(`${header},Tags`);
    expect(first).toMatch(/,2026-01-01T00:00:00Z,.*,"{""team"":""a \\""b\\""""}"$/);
    expect(second).toMatch(/,i-1,$/);
  });

  it('takes the service, resource ids and charge days it is given', () => {
    const day = (i: number) => new Date(Date.UTC(2025, 2, 10 + i));
    const [, row] = focusFile([1, 2], {
      month: '2025-03',
      service: 'Amazon Elastic Compute Cloud',
      resourceId: (i) => `vm-${i}`,
      chargeDay: day,
    }).split('\n');
    expect(row).toBe(
      '1,1,USD,2025-03-01T00:00:00Z,2025-04-01T00:00:00Z,2025-03-10T00:00:00Z,2025-03-10T01:00:00Z,Amazon Elastic Compute Cloud,vm-0',
    );
  });

  it('spreads rows over the days of the current month so far', () => {
    const now = new Date();
    const days = focusFile(
      Array.from({ length: 40 }, () => 1),
      { chargeDay: 'spread' },
    )
      .trim()
      .split('\n')
      .slice(1)
      .map((line) => line.split(',')[5]!.slice(0, 10));
    const first = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), 1)).toISOString().slice(0, 10);
    expect(days[0]).toBe(first);
    expect(new Set(days).size).toBe(now.getUTCDate());
  });
});

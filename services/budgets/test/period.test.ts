import { describe, expect, it } from 'vitest';
import { evaluate, type EvaluationState } from '../src/budgets/evaluation';
import { dayOf, forecastSpend, percentageUsed, periodOf, type BudgetPeriod } from '../src/budgets/period';

const at = (iso: string) => new Date(iso);

describe('calendar periods in UTC', () => {
  it.each<[BudgetPeriod, string, string, string]>([
    ['monthly', '2026-11-23T04:00:00Z', '2026-11-01', '2026-12-01'],
    ['monthly', '2026-12-31T23:59:59.999Z', '2026-12-01', '2027-01-01'],
    ['monthly', '2027-01-01T00:00:00Z', '2027-01-01', '2027-02-01'],
    ['monthly', '2024-02-29T12:00:00Z', '2024-02-01', '2024-03-01'],
    ['quarterly', '2026-01-01T00:00:00Z', '2026-01-01', '2026-04-01'],
    ['quarterly', '2026-03-31T23:59:59Z', '2026-01-01', '2026-04-01'],
    ['quarterly', '2026-04-01T00:00:00Z', '2026-04-01', '2026-07-01'],
    ['quarterly', '2026-08-15T00:00:00Z', '2026-07-01', '2026-10-01'],
    ['quarterly', '2026-11-23T00:00:00Z', '2026-10-01', '2027-01-01'],
    ['yearly', '2026-06-30T00:00:00Z', '2026-01-01', '2027-01-01'],
    ['yearly', '2024-12-31T23:59:59Z', '2024-01-01', '2025-01-01'],
  ])('%s period of %s is [%s, %s)', (period, when, start, end) => {
    const range = periodOf(period, at(when));
    expect([dayOf(range.start), dayOf(range.end)]).toEqual([start, end]);
    expect(range.start.toISOString()).toBe(`${start}T00:00:00.000Z`);
  });

  it('ignores the local time zone: a time just before midnight UTC stays in its UTC month', () => {
    // 23:30 UTC on the last day is already the next day east of UTC.
    expect(dayOf(periodOf('monthly', at('2026-04-30T23:30:00Z')).start)).toBe('2026-04-01');
  });

  it.each([
    ['a leap February', '2024-02-10T00:00:00Z', 29],
    ['a common February', '2026-02-10T00:00:00Z', 28],
    ['a 31-day month', '2026-07-10T00:00:00Z', 31],
  ])('has the days of %s', (_case, when, days) => {
    const { start, end } = periodOf('monthly', at(when));
    expect((end.getTime() - start.getTime()) / 86_400_000).toBe(days);
  });

  it('has 366 days in a leap year and 91 in the first quarter of one', () => {
    const year = periodOf('yearly', at('2024-05-05T00:00:00Z'));
    expect((year.end.getTime() - year.start.getTime()) / 86_400_000).toBe(366);
    const quarter = periodOf('quarterly', at('2024-02-29T00:00:00Z'));
    expect((quarter.end.getTime() - quarter.start.getTime()) / 86_400_000).toBe(91);
  });
});

describe('forecast: linear run rate to the end of the period', () => {
  const november = periodOf('monthly', at('2026-11-15T00:00:00Z')); // 30 days

  it('extrapolates from the last charge day with data in the period', () => {
    // 10 days covered (1..10 November) of 30.
    expect(forecastSpend(100, november, '2026-11-10', at('2026-11-20T00:00:00Z'))).toBe(300);
  });

  it('extrapolates from now when no charge day in the period is known', () => {
    expect(forecastSpend(100, november, null, at('2026-11-16T00:00:00Z'))).toBe(200);
    expect(forecastSpend(100, november, '2026-10-31', at('2026-11-16T00:00:00Z'))).toBe(200);
  });

  it('uses the real length of a leap February', () => {
    const february = periodOf('monthly', at('2024-02-01T00:00:00Z'));
    // 10 of 29 days.
    expect(forecastSpend(10, february, '2024-02-10', at('2024-02-12T00:00:00Z'))).toBe(29);
  });

  it('is the spend itself for a period that is over or has not begun', () => {
    expect(forecastSpend(123.45, november, null, at('2026-12-05T00:00:00Z'))).toBe(123.45);
    expect(forecastSpend(123.45, november, '2026-11-30', at('2026-12-05T00:00:00Z'))).toBe(123.45);
    expect(forecastSpend(0, november, null, at('2026-11-01T00:00:00Z'))).toBe(0);
  });

  it('rounds to cents', () => {
    expect(forecastSpend(10, november, '2026-11-07', at('2026-11-08T00:00:00Z'))).toBe(42.86);
  });
});

describe('evaluation', () => {
  const range = periodOf('monthly', at('2026-11-10T00:00:00Z'));
  const now = at('2026-11-10T12:00:00Z');
  const fresh: EvaluationState = {
    status: 'active',
    amount: 1000,
    thresholds: [50, 80, 100].map((percentage) => ({ percentage, notifiedAt: null })),
    periodStart: range.start,
  };

  it('computes the percentage used with two decimals', () => {
    expect(percentageUsed(333.335, 1000)).toBe(33.33);
    expect(percentageUsed(1, 3)).toBe(33.33);
    expect(percentageUsed(2500, 1000)).toBe(250);
  });

  it('crosses each threshold once, in order, and breaches at 100 %', () => {
    const first = evaluate(fresh, 600, range, now);
    expect(first).toMatchObject({ crossed: [50], breached: false, status: 'active', percentageUsed: 60 });
    const second = evaluate({ ...fresh, thresholds: first.thresholds }, 850, range, now);
    expect(second.crossed).toEqual([80]);
    expect(second.thresholds[0]!.notifiedAt).toEqual(now);
    const third = evaluate({ ...fresh, thresholds: second.thresholds }, 1000, range, now);
    expect(third).toMatchObject({ crossed: [100], breached: true, status: 'breached' });
  });

  it('crosses several thresholds in one evaluation, each once', () => {
    expect(evaluate(fresh, 5000, range, now)).toMatchObject({ crossed: [50, 80, 100], breached: true });
  });

  it('changes nothing when run again on its own outcome', () => {
    const once = evaluate(fresh, 900, range, now);
    const again = evaluate(
      { ...fresh, status: once.status, thresholds: once.thresholds },
      900,
      range,
      at('2026-11-11T00:00:00Z'),
    );
    expect(again.crossed).toEqual([]);
    expect(again.breached).toBe(false);
    expect(again.thresholds).toEqual(once.thresholds);
  });

  it('does not breach again within the period while it stays breached', () => {
    const breached = evaluate(fresh, 1200, range, now);
    const again = evaluate(
      { ...fresh, status: 'breached', thresholds: breached.thresholds },
      1300,
      range,
      now,
    );
    expect(again).toMatchObject({ breached: false, crossed: [], status: 'breached' });
  });

  it('starts a new period clean: notified times cleared, active below 100 %, thresholds crossed afresh', () => {
    const november = evaluate(fresh, 1200, range, now);
    const december = periodOf('monthly', at('2026-12-01T00:00:00Z'));
    const state = { ...fresh, status: november.status, thresholds: november.thresholds };
    const next = evaluate(state, 100, december, at('2026-12-01T00:00:00Z'));
    expect(next).toMatchObject({ newPeriod: true, status: 'active', crossed: [], breached: false });
    expect(next.thresholds.every((t) => t.notifiedAt === null)).toBe(true);
    const breachedAgain = evaluate(state, 1000, december, at('2026-12-02T00:00:00Z'));
    expect(breachedAgain).toMatchObject({ crossed: [50, 80, 100], breached: true });
  });

  it('is active again when the amount is raised above spend', () => {
    expect(evaluate({ ...fresh, status: 'breached', amount: 2000 }, 1200, range, now).status).toBe('active');
  });
});

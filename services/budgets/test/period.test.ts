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

describe('forecast: usage at its run rate, the rest once', () => {
  const november = periodOf('monthly', at('2026-11-15T00:00:00Z')); // 30 days
  /** Spend that is all usage-based, its latest usage day `day`. */
  const usageOnly = (spend: number, day: string | null) => ({ spend, usage: spend, lastUsageDay: day });

  it('extrapolates usage from the last usage day with data in the period', () => {
    // 10 days covered (1..10 November) of 30.
    expect(forecastSpend(usageOnly(100, '2026-11-10'), november, at('2026-11-20T00:00:00Z'))).toBe(300);
  });

  it('extrapolates from now when no usage day in the period is known', () => {
    expect(forecastSpend(usageOnly(100, null), november, at('2026-11-16T00:00:00Z'))).toBe(200);
    expect(forecastSpend(usageOnly(100, '2026-10-31'), november, at('2026-11-16T00:00:00Z'))).toBe(200);
  });

  it('uses the real length of a leap February', () => {
    const february = periodOf('monthly', at('2024-02-01T00:00:00Z'));
    // 10 of 29 days.
    expect(forecastSpend(usageOnly(10, '2024-02-10'), february, at('2024-02-12T00:00:00Z'))).toBe(29);
  });

  it('is the spend itself for a period that is over or has not begun', () => {
    expect(forecastSpend(usageOnly(123.45, null), november, at('2026-12-05T00:00:00Z'))).toBe(123.45);
    expect(forecastSpend(usageOnly(123.45, '2026-11-30'), november, at('2026-12-05T00:00:00Z'))).toBe(123.45);
    expect(forecastSpend(usageOnly(0, null), november, at('2026-11-01T00:00:00Z'))).toBe(0);
  });

  it('rounds to cents', () => {
    expect(forecastSpend(usageOnly(10, '2026-11-07'), november, at('2026-11-08T00:00:00Z'))).toBe(42.86);
  });

  it('counts a whole-month fee booked on the 1st once, not times the period over the days covered', () => {
    // 8 days of 20 USD usage and a 300 USD monthly fee on the 1st: 20 * 30 + 300, not (160 + 300) * 30 / 8.
    const spend = { spend: 8 * 20 + 300, usage: 8 * 20, lastUsageDay: '2026-11-08' };
    expect(forecastSpend(spend, november, at('2026-11-09T06:00:00Z'))).toBe(20 * 30 + 300);
    // Only the fee so far: nothing to project, the fee is the forecast.
    const feeOnly = { spend: 300, usage: 0, lastUsageDay: null };
    expect(forecastSpend(feeOnly, november, at('2026-11-01T06:00:00Z'))).toBe(300);
  });
});

/**
 * The forecast's error on a generated two-month series: daily usage of about 40 USD with ±6 % jitter
 * and a slow drift, a 300 USD recurring fee on each 1st, a 500 USD one-time purchase on 12 October, a
 * 120 USD one-time support charge on 18 November and a credit of -25 USD on each 20th. Each day's
 * forecast is what a budget read the next morning shows: the spend of the days so far, the usage part
 * projected. October fits the usage error (its worst from day 7 on, usage alone); November is held out:
 * each day's error there must stay within that bound plus the one-time charges not yet booked, which no
 * forecast can know. The measured figures are in the README (forecasts).
 */
describe('forecast error on a generated two-month series with a held-out month', () => {
  interface Charge {
    day: string;
    cost: number;
    usage: boolean;
  }
  // mulberry32: a seeded generator, so the series and the measured error are the same on every run.
  function random(seed: number) {
    let state = seed;
    return () => {
      state = (state + 0x6d2b79f5) | 0;
      let t = Math.imul(state ^ (state >>> 15), 1 | state);
      t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
      return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296;
    };
  }
  const next = random(18);
  const charges: Charge[] = [];
  for (let date = at('2026-10-01T00:00:00Z'), index = 0; date < at('2026-12-01T00:00:00Z'); index++) {
    const day = dayOf(date);
    const usage = 40 * (1 + index * 0.002) * (1 + (next() * 2 - 1) * 0.06);
    charges.push({ day, cost: Math.round(usage * 100) / 100, usage: true });
    if (day.endsWith('-01')) charges.push({ day, cost: 300, usage: false });
    if (day.endsWith('-20')) charges.push({ day, cost: -25, usage: false });
    if (day === '2026-10-12') charges.push({ day, cost: 500, usage: false });
    if (day === '2026-11-18') charges.push({ day, cost: 120, usage: false });
    date = new Date(date.getTime() + 86_400_000);
  }
  const sum = (list: Charge[]) => list.reduce((total, c) => total + c.cost, 0);

  /**
   * Each day of `month`: the forecast the next morning from the charges `counted` booked so far (those
   * `asUsage` projected), its error against the month's total of `counted`, and what of the month's
   * non-usage charges was still to come.
   */
  function daysOf(month: string, counted: (c: Charge) => boolean, asUsage: (c: Charge) => boolean) {
    const range = periodOf('monthly', at(`${month}-01T00:00:00Z`));
    const ofMonth = charges.filter((c) => c.day.startsWith(month) && counted(c));
    const total = sum(ofMonth);
    return [...new Set(ofMonth.map((c) => c.day))].map((day, index) => {
      const sofar = ofMonth.filter((c) => c.day <= day);
      const morning = new Date(Date.parse(`${day}T08:00:00Z`) + 86_400_000);
      const forecast = forecastSpend(
        { spend: sum(sofar), usage: sum(sofar.filter(asUsage)), lastUsageDay: day },
        range,
        morning,
      );
      const toCome = Math.abs(sum(ofMonth.filter((c) => c.day > day && !c.usage)));
      return { day: index + 1, error: Math.abs(forecast - total) / total, toCome: toCome / total };
    });
  }
  const fromDay7 = <T extends { day: number }>(list: T[]) => list.filter((d) => d.day >= 7);
  const mean = (list: { error: number }[]) => list.reduce((total, d) => total + d.error, 0) / list.length;
  const byUsage = (c: Charge) => c.usage;

  it('stays within the usage error October fits on held-out November, where projecting every charge does not', () => {
    const fitted = Math.max(...fromDay7(daysOf('2026-10', byUsage, byUsage)).map((d) => d.error));
    const heldOut = fromDay7(daysOf('2026-11', () => true, byUsage));
    const old = fromDay7(
      daysOf(
        '2026-11',
        () => true,
        () => true,
      ),
    );
    if (process.env.FORECAST_ERROR_REPORT)
      console.log({
        fitted,
        heldOutMean: mean(heldOut),
        heldOutWorst: Math.max(...heldOut.map((d) => d.error)),
        heldOutDay8: heldOut.find((d) => d.day === 8)!.error,
        heldOutFromDay20: Math.max(...heldOut.filter((d) => d.day >= 20).map((d) => d.error)),
        oldMean: mean(old),
        oldDay8: old.find((d) => d.day === 8)!.error,
      });
    // Within the fitted usage error plus the one-time charges still to come, every day from the 7th.
    expect(heldOut.filter((d) => d.error > fitted + d.toCome)).toEqual([]);
    expect(mean(heldOut)).toBeLessThan(0.04);
    // Once every one-time charge is booked (from the 20th on), only the usage error is left.
    expect(Math.max(...heldOut.filter((d) => d.day >= 20).map((d) => d.error))).toBeLessThanOrEqual(fitted);
    // The old forecast (every charge projected) on the morning after 8 November: the ×3.75 of the issue.
    expect(old.find((d) => d.day === 8)!.error).toBeGreaterThan(0.3);
    expect(mean(old)).toBeGreaterThan(3 * mean(heldOut));
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

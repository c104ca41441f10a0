import { describe, expect, it } from 'vitest';
import { defaultMinDailyImpactIn } from './min-daily-impact';

const rate = (fromCurrency: string, toCurrency: string, value: number) => ({
  fromCurrency,
  toCurrency,
  rate: value,
});

describe('the default minimum daily impact in the data currency', () => {
  it('is the US dollar amount itself for USD data (or data without a currency)', () => {
    expect(defaultMinDailyImpactIn('USD', 50, [rate('USD', 'EUR', 0.9)])).toEqual({
      amount: 50,
      basis: 'usd',
    });
    expect(defaultMinDailyImpactIn('', 50, [])).toEqual({ amount: 50, basis: 'usd' });
  });

  it("converts with the operator's rate, direct first, else the inverse of the reverse one, to cents", () => {
    expect(defaultMinDailyImpactIn('JPY', 50, [rate('USD', 'JPY', 148.37)])).toEqual({
      amount: 7418.5,
      basis: 'operator-rate',
    });
    // 50 / 1.1 = 45.4545...
    expect(defaultMinDailyImpactIn('EUR', 50, [rate('EUR', 'USD', 1.1)])).toEqual({
      amount: 45.45,
      basis: 'operator-rate',
    });
    expect(
      defaultMinDailyImpactIn('EUR', 50, [rate('EUR', 'USD', 1.1), rate('USD', 'EUR', 0.8)]).amount,
    ).toBe(40);
    // A rate between two other currencies does not count.
    expect(defaultMinDailyImpactIn('EUR', 50, [rate('GBP', 'EUR', 1.2)]).basis).toBe('approximate-table');
  });

  it('uses the documented approximate table for common currencies without a rate, as a round figure', () => {
    // README: 50 USD is about 7,500 JPY, 45 EUR, 39 GBP, 4,300 INR, 70,000 KRW.
    expect(defaultMinDailyImpactIn('JPY', 50, [])).toEqual({ amount: 7500, basis: 'approximate-table' });
    expect(defaultMinDailyImpactIn('jpy', 50, []).amount).toBe(7500);
    expect(defaultMinDailyImpactIn('EUR', 50, []).amount).toBe(45);
    expect(defaultMinDailyImpactIn('GBP', 50, []).amount).toBe(39);
    expect(defaultMinDailyImpactIn('INR', 50, []).amount).toBe(4300);
    expect(defaultMinDailyImpactIn('KRW', 50, []).amount).toBe(70_000);
    expect(defaultMinDailyImpactIn('JPY', 0, []).amount).toBe(0);
  });

  it('leaves the number as it is for a currency neither the rates nor the table know', () => {
    expect(defaultMinDailyImpactIn('XOF', 50, [])).toEqual({ amount: 50, basis: 'unconverted' });
  });
});

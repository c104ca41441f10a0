import type { costs } from '@costgov/contracts';
import type { RpcClient } from '@costgov/rpc';

/**
 * Approximate units of a currency per US dollar (rounded mid-2025 market rates), for the default
 * minimum daily impact of the most common billing currencies other than USD when the operator set no
 * exchange rate. Only a default's order of magnitude rests on them: 50 USD is about 7,500 JPY, not 50.
 */
export const approximateUnitsPerUsd: Readonly<Record<string, number>> = {
  EUR: 0.9,
  GBP: 0.78,
  JPY: 150,
  CNY: 7.2,
  INR: 85,
  KRW: 1400,
  CAD: 1.4,
  AUD: 1.55,
  NZD: 1.7,
  CHF: 0.85,
  SEK: 10,
  NOK: 10.5,
  DKK: 6.8,
  PLN: 3.8,
  BRL: 5.5,
  MXN: 19,
  SGD: 1.3,
  HKD: 7.8,
  ZAR: 18,
  TWD: 31,
};

/** How the default minimum daily impact was put in the data's currency. */
export type ImpactBasis = 'usd' | 'operator-rate' | 'approximate-table' | 'unconverted';

export interface DefaultImpact {
  /** In the data's currency. */
  amount: number;
  basis: ImpactBasis;
}

type Rate = Pick<costs.Rate, 'fromCurrency' | 'toCurrency' | 'rate'>;

/** Two significant digits: 7,500 rather than 7,458.21, a threshold read as a round figure. */
const roundFigure = (value: number) => {
  if (value <= 0) return 0;
  const scale = 10 ** (Math.floor(Math.log10(value)) - 1);
  return Math.round(value / scale) * scale;
};

/**
 * The scanner's default minimum daily impact (`usdAmount`, ANOMALY_MIN_DAILY_IMPACT, in US dollars) in
 * `currency`, the data's: as is for USD; else converted with the operator's exchange rate (USD to the
 * currency, else the inverse of the currency to USD, as costs converts spend), rounded to cents; else
 * by `approximateUnitsPerUsd`, rounded to two significant digits; else, for a currency neither knows,
 * the number as is (`unconverted`, which the scanner logs).
 */
export function defaultMinDailyImpactIn(currency: string, usdAmount: number, rates: Rate[]): DefaultImpact {
  const code = currency.toUpperCase();
  if (!code || code === 'USD') return { amount: usdAmount, basis: 'usd' };
  const direct = rates.find((r) => r.fromCurrency === 'USD' && r.toCurrency === code && r.rate > 0);
  const inverse = rates.find((r) => r.fromCurrency === code && r.toCurrency === 'USD' && r.rate > 0);
  const rate = direct ? direct.rate : inverse ? 1 / inverse.rate : undefined;
  if (rate !== undefined) return { amount: Math.round(usdAmount * rate * 100) / 100, basis: 'operator-rate' };
  const approximate = approximateUnitsPerUsd[code];
  if (approximate !== undefined)
    return { amount: roundFigure(usdAmount * approximate), basis: 'approximate-table' };
  return { amount: usdAmount, basis: 'unconverted' };
}

/** The same, reading the operator's rates from costs (RatesService.ListRates) only when they matter. */
export async function defaultMinDailyImpactOverRpc(
  rates: Pick<RpcClient<typeof costs.RatesService>, 'listRates'> | undefined,
  currency: string,
  usdAmount: number,
): Promise<DefaultImpact> {
  const code = currency.toUpperCase();
  if (!code || code === 'USD' || !rates) return defaultMinDailyImpactIn(code, usdAmount, []);
  return defaultMinDailyImpactIn(code, usdAmount, (await rates.listRates({})).rates);
}

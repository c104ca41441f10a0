import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { costs } from '@costgov/contracts';
import { ValidationError } from '@costgov/errors';
import type { RpcClient } from '@costgov/rpc';
import { startCosts, type CostsUnderTest } from './fixture';

let costsService: CostsUnderTest;
let client: RpcClient<typeof costs.RatesService>;

beforeAll(async () => {
  costsService = await startCosts();
  client = costsService.clients.rates;
});

afterAll(() => costsService?.stop());

describe('exchange rates (operator, gRPC only)', () => {
  it('sets, replaces and lists rates sorted by currency pair', async () => {
    const set = await client.setRate({ fromCurrency: 'EUR', toCurrency: 'USD', rate: 1.08 }, {});
    expect(set).toMatchObject({ fromCurrency: 'EUR', toCurrency: 'USD', rate: 1.08 });
    await client.setRate({ fromCurrency: 'CHF', toCurrency: 'EUR', rate: 1.04 }, {});
    await client.setRate({ fromCurrency: 'EUR', toCurrency: 'USD', rate: 1.1 }, {});
    const { rates } = await client.listRates({}, {});
    expect(rates.map((r) => [r.fromCurrency, r.toCurrency, r.rate])).toEqual([
      ['CHF', 'EUR', 1.04],
      ['EUR', 'USD', 1.1],
    ]);
    expect(rates[1]!.updatedAt).toBeDefined();
  });

  it.each([
    ['a lower-case code', { fromCurrency: 'eur', toCurrency: 'USD', rate: 1 }, ['from_currency']],
    ['a code that is not ISO 4217', { fromCurrency: 'EUR', toCurrency: 'ABC', rate: 1 }, ['to_currency']],
    ['a rate of zero', { fromCurrency: 'EUR', toCurrency: 'GBP', rate: 0 }, ['rate']],
    ['a negative rate', { fromCurrency: 'EUR', toCurrency: 'GBP', rate: -2 }, ['rate']],
    ['a rate that is not a number', { fromCurrency: 'EUR', toCurrency: 'GBP', rate: Number.NaN }, ['rate']],
    ['the same currency twice', { fromCurrency: 'EUR', toCurrency: 'EUR', rate: 1 }, ['to_currency']],
    [
      'everything wrong',
      { fromCurrency: '', toCurrency: 'usd', rate: -1 },
      ['from_currency', 'to_currency', 'rate'],
    ],
  ])('refuses %s with every field violation and stores nothing', async (_case, request, fields) => {
    const before = (await client.listRates({}, {})).rates;
    const error = await client.setRate(request, {}).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ValidationError);
    expect((error as ValidationError).details.map((d) => d.field)).toEqual(fields);
    expect((await client.listRates({}, {})).rates).toEqual(before);
  });
});

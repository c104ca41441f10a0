import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { costs } from '@costgov/contracts';
import { ValidationError } from '@costgov/errors';
import { createLogger } from '@costgov/log';
import { createRpcClient, type RpcClient } from '@costgov/rpc';
import { startService, type RunningService } from '@costgov/runtime';
import { freshDb, testBus } from '@costgov/testing';
import { costsModule } from '../src/module';

const logger = createLogger('test', 'silent');

let service: RunningService;
let client: RpcClient<typeof costs.RatesService>;
let bus: Awaited<ReturnType<typeof testBus>>;

beforeAll(async () => {
  bus = await testBus(logger);
  const db = await freshDb('costs');
  service = await startService(costsModule(), {
    logger,
    bus,
    openDb: async () => db,
    dataDir: 'memory',
    grpcAddress: '127.0.0.1:0',
  });
  client = createRpcClient(costs.RatesService, `127.0.0.1:${service.port}`);
});

afterAll(async () => {
  client?.close();
  await service?.stop();
  await bus?.close();
});

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

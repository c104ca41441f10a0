import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { costsModule } from '@costgov/costs';
import { createLogger } from '@costgov/log';
import { startService, type RunningService } from '@costgov/runtime';
import { freePort, freshDb, testBus } from '@costgov/testing';
import { run } from '../src';
import type { RateView } from '../src/views';
import { jsonOf, stackFrame, type CliResult } from './cli';

const logger = createLogger('test', 'silent');
let service: RunningService;
let bus: Awaited<ReturnType<typeof testBus>>;

async function cliWith(env: Record<string, string | undefined>, ...argv: string[]): Promise<CliResult> {
  const result = { stdout: '', stderr: '' };
  const code = await run(argv, {
    stdout: { write: (text: string) => (result.stdout += text) },
    stderr: { write: (text: string) => (result.stderr += text) },
    env,
  });
  return { code, ...result };
}

const cli = (...argv: string[]) => cliWith({ COSTS_ADDR: `127.0.0.1:${service.port}` }, ...argv);

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
});

afterAll(async () => {
  await service?.stop();
  await bus?.close();
});

describe('costgov rates (gRPC to costs)', () => {
  it('sets a rate (codes in any case), replaces it, and lists the rates', async () => {
    const set = await cli('rates', 'set', 'eur', 'USD', '1.08');
    expect(set.code).toBe(0);
    expect(set.stdout).toMatch(/^from: +EUR$/m);
    expect(set.stdout).toMatch(/^to: +USD$/m);
    expect(set.stdout).toMatch(/^rate: +1\.08$/m);
    await cli('rates', 'set', 'GBP', 'EUR', '1.17');
    await cli('rates', 'set', 'EUR', 'USD', '1.1');
    const rates = jsonOf<RateView[]>(await cli('rates', 'list', '--json'));
    expect(rates.map((r) => [r.fromCurrency, r.toCurrency, r.rate])).toEqual([
      ['EUR', 'USD', 1.1],
      ['GBP', 'EUR', 1.17],
    ]);
    const table = await cli('rates', 'list');
    expect(table.stdout.split('\n')[0]).toMatch(/^FROM +TO +RATE +UPDATED$/);
    expect((await cli('rates', 'list', '--quiet')).stdout).toBe('EUR USD 1.1\nGBP EUR 1.17\n');
  });

  it('takes the address from --costs', async () => {
    const result = await cliWith({}, 'rates', 'list', '--costs', `127.0.0.1:${service.port}`, '--json');
    expect(result.code).toBe(0);
  });

  it('prints the refusal of a code that is not ISO 4217 with its field (exit 1)', async () => {
    const result = await cli('rates', 'set', 'EUR', 'XYZ', '2');
    expect(result.code).toBe(1);
    expect(result.stderr).toMatch(/^ {2}to_currency: must be an ISO 4217 currency code/m);
    expect(result.stderr).not.toMatch(stackFrame);
  });

  it.each([
    [['rates', 'set', 'EUR', 'USD', '0'], /value '0' is invalid for argument 'rate'/],
    [['rates', 'set', 'EUR', 'USD', '-1'], /value '-1' is invalid for argument 'rate'/],
    [['rates', 'set', 'EUR', 'USD', 'abc'], /value 'abc' is invalid for argument 'rate'/],
    [['rates', 'set', 'EUR', 'USD'], /missing required argument 'rate'/],
  ])('%j is a usage error (exit 2)', async (argv, message) => {
    const result = await cli(...argv);
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(message);
  });

  it('says which service it cannot reach (exit 3)', async () => {
    const nowhere = `127.0.0.1:${await freePort()}`;
    const result = await cliWith({ COSTS_ADDR: nowhere }, 'rates', 'list');
    expect(result.code).toBe(3);
    expect(result.stderr).toMatch(`cannot reach the costs service at ${nowhere}`);
    expect(result.stderr).toMatch(/COSTS_ADDR/);
  });
});

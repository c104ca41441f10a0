import { InvalidArgumentError, Option, type Command } from 'commander';
import { type Field } from '../output';
import { defaultCostsAddress, type Act } from '../program';
import { rateView, type RateView } from '../views';
import { time } from '../output';

const rateFields: readonly Field<RateView>[] = [
  ['from', (r) => r.fromCurrency],
  ['to', (r) => r.toCurrency],
  ['rate', (r) => String(r.rate)],
  ['updated', (r) => time(r.updatedAt)],
];

/** A decimal number above zero, e.g. 1.08. */
function positiveNumber(text: string): number {
  const value = Number(text);
  if (!/^\d+(\.\d+)?$/.test(text) || !(value > 0) || !Number.isFinite(value))
    throw new InvalidArgumentError('Expected a number above 0, like 1.08.');
  return value;
}

/** An ISO 4217 code written in any case; the costs service checks that it exists. */
const currency = (text: string): string => text.toUpperCase();

/** `costgov rates …`: the exchange rates of the installation, over gRPC to the costs service (operators only). */
export function registerRates(program: Command, act: Act, env: Record<string, string | undefined>): void {
  const rates = program
    .command('rates')
    .description('set and list the exchange rates that convert spend into a budget’s currency')
    .addOption(
      new Option('--costs <host:port>', 'address of the costs service (env COSTS_ADDR)').default(
        env.COSTS_ADDR || defaultCostsAddress,
      ),
    );

  rates
    .command('set')
    .description('set 1 FROM = RATE TO (e.g. rates set EUR USD 1.08); TO→FROM uses 1/RATE unless set too')
    .argument('<from>', 'ISO 4217 currency code, e.g. EUR', currency)
    .argument('<to>', 'ISO 4217 currency code, e.g. USD', currency)
    .argument('<rate>', 'how many TO one FROM is worth', positiveNumber)
    .action(
      act(async ({ rates: client, output }, fromCurrency: string, toCurrency: string, rate: number) => {
        const set = await client().setRate({ fromCurrency, toCurrency, rate });
        output.show(rateView(set), rateFields, (r) => `${r.fromCurrency} ${r.toCurrency} ${r.rate}`);
      }),
    );

  rates
    .command('list')
    .description('list every exchange rate')
    .action(
      act(async ({ rates: client, output }) => {
        const { rates: list } = await client().listRates({});
        output.list(
          list.map(rateView),
          rateFields,
          (r) => `${r.fromCurrency} ${r.toCurrency} ${r.rate}`,
          'No exchange rates: spend in another currency than a budget’s is not counted.',
        );
      }),
    );
}

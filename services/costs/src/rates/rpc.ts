import { timestampFromDate } from '@bufbuild/protobuf/wkt';
import type { costs } from '@costgov/contracts';
import type { ServiceImpl } from '@costgov/rpc';
import type { Rate, Rates } from './rates';

const rateMessage = (rate: Rate) => ({
  fromCurrency: rate.fromCurrency,
  toCurrency: rate.toCurrency,
  rate: rate.rate,
  updatedAt: timestampFromDate(rate.updatedAt),
});

/** Operator-only: reachable over gRPC inside the cluster (the CLI), never routed by the gateway. */
export function ratesRpc(rates: Rates): ServiceImpl<typeof costs.RatesService> {
  return {
    async setRate(request) {
      return rateMessage(
        await rates.setRate({
          fromCurrency: request.fromCurrency,
          toCurrency: request.toCurrency,
          rate: request.rate,
        }),
      );
    },
    async listRates() {
      return { rates: (await rates.listRates()).map(rateMessage) };
    },
  };
}

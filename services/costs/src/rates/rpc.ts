import { costs } from '@costgov/contracts';
import { messageWriter, type ServiceImpl } from '@costgov/rpc';
import type { Rates } from './rates';

const rateMessage = messageWriter(costs.RateSchema);

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

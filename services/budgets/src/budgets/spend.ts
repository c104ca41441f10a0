import { timestampFromDate } from '@bufbuild/protobuf/wkt';
import type { costs } from '@costgov/contracts';
import type { RpcClient } from '@costgov/rpc';

export interface SpendQuery {
  teamId: string;
  connectionIds: string[];
  from: Date;
  to: Date;
  tags: Record<string, string>;
  currency: string;
}

export interface CurrencyAmount {
  currency: string;
  amount: number;
}

export interface Spend {
  /** Everything that could be converted into the asked currency. */
  converted: number;
  /** Spend in currencies without a rate to the asked one (not in `converted`). */
  unconverted: CurrencyAmount[];
  /** YYYY-MM-DD of the latest charge day with data, null when none. */
  lastChargeDay: string | null;
  /** Of `converted`: usage-based spend, what a forecast projects at its run rate. */
  usage: number;
  /** YYYY-MM-DD of the latest charge day with usage-based spend, null when none. */
  lastUsageDay: string | null;
}

/** Where a budget's spend comes from, which the costs service owns. */
export interface SpendSource {
  /** Spend of the connections in [from, to); rejects with UnavailableError when costs is down. */
  spendOf(query: SpendQuery): Promise<Spend>;
}

/** SpendSource asked of costs over gRPC (CostDataService.GetSpend). */
export function spendOverRpc(client: RpcClient<typeof costs.CostDataService>): SpendSource {
  return {
    async spendOf({ teamId, connectionIds, from, to, tags, currency }) {
      const answer = await client.getSpend(
        { connectionIds, from: timestampFromDate(from), to: timestampFromDate(to), tags, currency },
        { teamId },
      );
      return {
        converted: answer.converted,
        unconverted: answer.unconverted.map(({ currency: code, amount }) => ({ currency: code, amount })),
        lastChargeDay: answer.lastChargeDay || null,
        usage: answer.usageConverted,
        lastUsageDay: answer.lastUsageDay || null,
      };
    },
  };
}

import type { identity } from '@costgov/contracts';
import type { RpcClient } from '@costgov/rpc';

/** The team's scan credits, which identity keeps in a ledger keyed by scan id (so retries charge once). */
export interface ScanCredits {
  /** Rejects with ConflictError when the balance is short, UnavailableError when identity is down. */
  debit(teamId: string, scanId: string, credits: number): Promise<void>;
  /** Gives the scan's debit back; a second refund of the same scan changes nothing. */
  refund(teamId: string, scanId: string): Promise<void>;
}

export function scanCreditsOverRpc(client: RpcClient<typeof identity.IdentityService>): ScanCredits {
  return {
    async debit(teamId, scanId, credits) {
      await client.debitScanCredits({ scanId, credits: BigInt(credits) }, { teamId });
    },
    async refund(teamId, scanId) {
      await client.refundScanCredits({ scanId }, { teamId });
    },
  };
}

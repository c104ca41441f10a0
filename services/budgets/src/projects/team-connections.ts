import type { costs } from '@costgov/contracts';
import type { RpcClient } from '@costgov/rpc';

/** What budgets needs to know of a team's connections, which the costs service owns. */
export interface TeamConnections {
  /** Which of `ids` are not connections of the team; rejects with UnavailableError when costs is down. */
  missingIds(teamId: string, ids: string[]): Promise<Set<string>>;
}

/** TeamConnections asked of costs over gRPC (FindMissingConnections). */
export function teamConnectionsOverRpc(client: RpcClient<typeof costs.ConnectionsService>): TeamConnections {
  return {
    async missingIds(teamId, ids) {
      if (ids.length === 0) return new Set();
      const { missingIds } = await client.findMissingConnections({ ids }, { teamId });
      return new Set(missingIds);
    },
  };
}

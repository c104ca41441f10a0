import type { identity } from '@costgov/contracts';
import type { RpcClient } from '@costgov/rpc';

/** What budgets needs to know of a team's users, which identity owns. */
export interface TeamUsers {
  /** Which of `ids` are active users of the team; rejects with UnavailableError when identity is down. */
  activeUserIds(teamId: string, ids: string[]): Promise<Set<string>>;
}

/** TeamUsers asked of identity over gRPC (FindActiveUsers). */
export function teamUsersOverRpc(client: RpcClient<typeof identity.IdentityService>): TeamUsers {
  return {
    async activeUserIds(teamId, ids) {
      if (ids.length === 0) return new Set();
      const { userIds } = await client.findActiveUsers({ userIds: ids }, { teamId });
      return new Set(userIds);
    },
  };
}

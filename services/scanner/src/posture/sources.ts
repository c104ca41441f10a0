import { timestampFromDate } from '@bufbuild/protobuf/wkt';
import type { budgets, costs, identity } from '@costgov/contracts';
import type { RpcClient } from '@costgov/rpc';

export interface CurrencyAmount {
  currency: string;
  amount: number;
}

/** Tag coverage of a scope's cost in a window, as costs measures it (GetTagCoverage). */
export interface TagCoverage {
  /** Share (0..1) of the taggable cost carrying every required tag key. */
  ratio: number;
  /** False when there is no (positive) taggable cost in the window: nothing to measure. */
  measured: boolean;
  /** Cost left out because it cannot carry tags (no ResourceId; Tax, Credit, Purchase, Adjustment). */
  untaggable: CurrencyAmount[];
}

/** What the posture reads from the services that own it: budgets, identity (required tags) and costs. */
export interface PostureSources {
  /** The project's connections; rejects with NotFoundError for an unknown or another team's project. */
  projectConnections(teamId: string, projectId: string): Promise<string[]>;
  /** Every connection of the team. */
  teamConnections(teamId: string): Promise<string[]>;
  /**
   * Non-archived budgets of the team (of one project when given) with data in their current period
   * (`data_through` set): active and breached counts. A budget whose period holds no cost yet is not
   * counted: "not breached" means nothing when nothing was measured.
   */
  budgetCounts(teamId: string, projectId: string | null): Promise<{ active: number; breached: number }>;
  /** The tag keys the team requires on its cost. */
  requiredTags(teamId: string): Promise<string[]>;
  /** Coverage of the connections' taggable cost in [from, to) by the required tag keys. */
  tagCoverage(query: {
    teamId: string;
    connectionIds: string[];
    requiredTags: string[];
    from: Date;
    to: Date;
  }): Promise<TagCoverage>;
}

export interface PostureClients {
  projects: RpcClient<typeof budgets.ProjectsService>;
  budgets: RpcClient<typeof budgets.BudgetsService>;
  identity: RpcClient<typeof identity.IdentityService>;
  connections: RpcClient<typeof costs.ConnectionsService>;
  costData: RpcClient<typeof costs.CostDataService>;
}

const PAGE = 100;

/** PostureSources asked over gRPC, each call in the team's context. */
export function postureSourcesOverRpc(clients: PostureClients): PostureSources {
  return {
    async projectConnections(teamId, projectId) {
      return (await clients.projects.getProject({ id: projectId }, { teamId })).connectionIds;
    },
    async teamConnections(teamId) {
      const ids: string[] = [];
      for (let page = 1; ; page++) {
        const { connections, meta } = await clients.connections.listConnections(
          { page: { page, perPage: PAGE } },
          { teamId },
        );
        ids.push(...connections.map((connection) => connection.id));
        if (page >= (meta?.totalPages ?? 0) || connections.length === 0) return ids;
      }
    },
    async budgetCounts(teamId, projectId) {
      // Paged through: whether a budget has data in its current period (data_through) is per budget.
      const countOf = async (status: string) => {
        let withData = 0;
        for (let page = 1; ; page++) {
          const { budgets, meta } = await clients.budgets.listBudgets(
            { projectId: projectId ?? undefined, status, page: { page, perPage: PAGE } },
            { teamId },
          );
          withData += budgets.filter((budget) => budget.dataThrough !== undefined).length;
          if (page >= (meta?.totalPages ?? 0) || budgets.length === 0) return withData;
        }
      };
      const [active, breached] = await Promise.all([countOf('active'), countOf('breached')]);
      return { active, breached };
    },
    async requiredTags(teamId) {
      return (await clients.identity.getTeamSettings({}, { teamId })).requiredTags;
    },
    async tagCoverage({ teamId, connectionIds, requiredTags, from, to }) {
      const answer = await clients.costData.getTagCoverage(
        { connectionIds, requiredTags, from: timestampFromDate(from), to: timestampFromDate(to) },
        { teamId },
      );
      // Measured when there is taggable cost (summed at face value across currencies: its sign is what counts).
      const taggable = answer.total.reduce((sum, part) => sum + part.amount, 0);
      return {
        ratio: answer.ratio,
        measured: taggable > 0,
        untaggable: answer.untaggable
          .filter((part) => part.amount !== 0)
          .map(({ currency, amount }) => ({ currency, amount })),
      };
    },
  };
}

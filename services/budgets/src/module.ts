import path from 'node:path';
import { decodeEvent } from '@costgov/bus';
import { budgets, costs, events, identity } from '@costgov/contracts';
import { migrationsFrom } from '@costgov/db';
import { createRpcClient, type RpcClient } from '@costgov/rpc';
import type { ServiceModule } from '@costgov/runtime';
import { budgetsFactory } from './budgets/budgets';
import { budgetEvaluator } from './budgets/evaluator';
import { evaluateAfterCostChange, spendChangingEvents } from './budgets/ingested';
import { budgetsRpc } from './budgets/rpc';
import { spendOverRpc, type SpendSource } from './budgets/spend';
import { budgetsConfig, type BudgetsConfig } from './config';
import { projectReadCache } from './projects/detail-cache';
import { projectsFactory } from './projects/projects';
import { projectsRpc } from './projects/rpc';
import { teamConnectionsOverRpc, type TeamConnections } from './projects/team-connections';
import { teamUsersOverRpc, type TeamUsers } from './projects/team-users';
import { countViolationChange, violationEventTypes } from './projects/violation-counts';

/**
 * Where budgets finds the team's users (identity) and connections and spend (costs): the services at
 * addresses (IDENTITY_ADDR and COSTS_ADDR unless given), or (tests) stand-ins.
 */
export type BudgetsOptions =
  | { identityAddress?: string; costsAddress?: string }
  | { teamUsers: TeamUsers; teamConnections: TeamConnections; spendSource: SpendSource };

export function budgetsModule(options: BudgetsOptions = {}): ServiceModule<BudgetsConfig> {
  return {
    name: 'budgets',
    migrations: migrationsFrom(path.join(__dirname, 'db/migrations')),
    config: budgetsConfig,
    async start({ db, rpc, outbox, newId, now, logger, consume, once, config }) {
      const clients: Array<{ close(): void }> = [];
      let teamUsers: TeamUsers;
      let teamConnections: TeamConnections;
      let spendSource: SpendSource;
      if ('teamUsers' in options) ({ teamUsers, teamConnections, spendSource } = options);
      else {
        const deadline = { deadlineMs: config.RPC_DEADLINE_MS };
        const costsAddress = options.costsAddress ?? config.COSTS_ADDR;
        const identityClient: RpcClient<typeof identity.IdentityService> = createRpcClient(
          identity.IdentityService,
          options.identityAddress ?? config.IDENTITY_ADDR,
          deadline,
        );
        const connectionsClient = createRpcClient(costs.ConnectionsService, costsAddress, deadline);
        const costDataClient = createRpcClient(costs.CostDataService, costsAddress, deadline);
        clients.push(identityClient, connectionsClient, costDataClient);
        teamUsers = teamUsersOverRpc(identityClient);
        teamConnections = teamConnectionsOverRpc(connectionsClient);
        spendSource = spendOverRpc(costDataClient);
      }
      const evaluator = budgetEvaluator({ db, outbox, now, spendSource, logger });
      const readCache = config.BUDGETS_PROJECT_CACHE === 'on' ? projectReadCache({ db, logger }) : undefined;
      const projects = projectsFactory({
        db,
        outbox,
        newId,
        now,
        teamUsers,
        teamConnections,
        onSpendInputsChanged: evaluator.sweepSoon,
        readCache,
      });
      rpc.add(budgets.ProjectsService, projectsRpc(projects, once));
      rpc.add(
        budgets.BudgetsService,
        budgetsRpc(budgetsFactory({ db, outbox, newId, now, evaluator }), once),
      );
      await consume({
        durable: 'budgets_spend_changed',
        types: spendChangingEvents,
        handler: (tx, event) => evaluateAfterCostChange(tx, event, evaluator),
      });
      await consume({
        durable: 'budgets_connection_deleted',
        types: ['costs.connection.deleted'],
        handler: async (tx, event) => {
          const { teamId, connectionId } = decodeEvent(events.ConnectionChangedSchema, event);
          await projects.forgetConnection(tx, teamId, connectionId);
        },
      });
      await consume({
        durable: 'budgets_violation_counts',
        types: violationEventTypes,
        handler: countViolationChange,
      });
      evaluator.start(config.BUDGET_EVALUATION_INTERVAL_MS);
      return async () => {
        await evaluator.stop();
        await readCache?.stop();
        for (const client of clients) client.close();
      };
    },
  };
}

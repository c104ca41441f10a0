import path from 'node:path';
import { budgets, identity } from '@costgov/contracts';
import { migrationsFrom } from '@costgov/db';
import { createRpcClient, type RpcClient } from '@costgov/rpc';
import type { ServiceModule } from '@costgov/runtime';
import { projectsFactory } from './projects/projects';
import { projectsRpc } from './projects/rpc';
import { teamUsersOverRpc, type TeamUsers } from './projects/team-users';
import { countViolationChange, violationEventTypes } from './projects/violation-counts';

/** Where budgets finds the team's users: identity at an address, or (tests) a stand-in. */
export type BudgetsOptions = { identityAddress: string; rpcDeadlineMs?: number } | { teamUsers: TeamUsers };

export function budgetsModule(options: BudgetsOptions): ServiceModule {
  return {
    name: 'budgets',
    migrations: migrationsFrom(path.join(__dirname, 'db/migrations')),
    async start({ db, rpc, outbox, newId, now, consume }) {
      let identityClient: RpcClient<typeof identity.IdentityService> | undefined;
      let teamUsers: TeamUsers;
      if ('teamUsers' in options) teamUsers = options.teamUsers;
      else {
        identityClient = createRpcClient(identity.IdentityService, options.identityAddress, {
          deadlineMs: options.rpcDeadlineMs,
        });
        teamUsers = teamUsersOverRpc(identityClient);
      }
      const projects = projectsFactory({ db, outbox, newId, now, teamUsers });
      rpc.add(budgets.ProjectsService, projectsRpc(projects));
      await consume({
        durable: 'budgets_violation_counts',
        types: violationEventTypes,
        handler: countViolationChange,
      });
      return async () => identityClient?.close();
    },
  };
}

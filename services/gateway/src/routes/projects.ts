import { budgets } from '@costgov/contracts';
import type { RpcClient } from '@costgov/rpc';
import { operationTable } from '../rest/operation-table';

/** /v1/guard/projects: requests and answers are the messages' fields under their REST names. */
export const projectOperations = (client: RpcClient<typeof budgets.ProjectsService>) =>
  operationTable(budgets.ProjectsService, client, {
    listProjects: { rpc: 'listProjects' },
    createProject: { rpc: 'createProject' },
    getProject: { rpc: 'getProject' },
    updateProject: {
      rpc: 'updateProject',
      // `"approval_rules": null` removes the rules (an unset message would change nothing).
      request: ({ body }) => ({ clearApprovalRules: body.approval_rules === null }),
    },
    deleteProject: { rpc: 'deleteProject' },
  });

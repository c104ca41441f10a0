import type { budgets } from '@costgov/contracts';
import type { RpcClient } from '@costgov/rpc';

/** What a scan needs to know of its project, which budgets owns. */
export interface ScannedProject {
  id: string;
  status: string;
  connectionIds: string[];
}

export interface ProjectLookup {
  /** The team's project; rejects with NotFoundError (not the team's) or UnavailableError (budgets down). */
  project(teamId: string, projectId: string): Promise<ScannedProject>;
}

/** ProjectLookup asked of budgets over gRPC (ProjectsService.GetProject, team in the call context). */
export function projectLookupOverRpc(client: RpcClient<typeof budgets.ProjectsService>): ProjectLookup {
  return {
    async project(teamId, projectId) {
      const project = await client.getProject({ id: projectId }, { teamId });
      return { id: project.id, status: project.status, connectionIds: project.connectionIds };
    },
  };
}

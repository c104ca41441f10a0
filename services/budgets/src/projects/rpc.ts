import { budgets } from '@costgov/contracts';
import { messageWriter, teamScoped, type ServiceImpl } from '@costgov/rpc';
import type { IdempotentCalls } from '@costgov/runtime';
import type { Projects } from './projects';

/** A listed or created project carries no budgets; the single read (ProjectDetail) does. */
const projectMessage = messageWriter(budgets.ProjectSchema, { absent: ['budgets'] });

export function projectsRpc(
  projects: Projects,
  once: IdempotentCalls,
): ServiceImpl<typeof budgets.ProjectsService> {
  return {
    createProject: teamScoped((request, ctx) =>
      once(ctx, 'CreateProject', budgets.ProjectSchema, projectMessage, (effect) =>
        projects.createProject(
          ctx.teamId,
          { name: request.name, connectionIds: request.connectionIds, approvalRules: request.approvalRules },
          effect,
        ),
      ),
    ),
    getProject: teamScoped(async (request, { teamId }) =>
      projectMessage(await projects.getProject(teamId, request.id)),
    ),
    listProjects: teamScoped(async (request, { teamId }) => {
      const { projects: list, meta } = await projects.listProjects(teamId, {
        status: request.status,
        connectionId: request.connectionId,
        page: request.page?.page,
        perPage: request.page?.perPage,
      });
      return { projects: list.map(projectMessage), meta };
    }),
    updateProject: teamScoped(async (request, { teamId }) => {
      await projects.updateProject(teamId, request.id, {
        name: request.name,
        status: request.status,
        connectionIds: request.connectionIds?.values,
        approvalRules: request.clearApprovalRules ? null : request.approvalRules,
      });
      return projectMessage(await projects.getProject(teamId, request.id));
    }),
    deleteProject: teamScoped(async (request, { teamId }) => {
      await projects.deleteProject(teamId, request.id);
      return {};
    }),
  };
}

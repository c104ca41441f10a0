import { timestampFromDate } from '@bufbuild/protobuf/wkt';
import { budgets } from '@costgov/contracts';
import { BadRequestError } from '@costgov/errors';
import type { CallContext, ServiceImpl } from '@costgov/rpc';
import type { IdempotentCalls } from '@costgov/runtime';
import type { Project, ProjectDetail, Projects } from './projects';

function teamOf(ctx: CallContext): string {
  if (!ctx.teamId) throw new BadRequestError('The call carries no team (x-team-id metadata).');
  return ctx.teamId;
}

const projectMessage = (project: Project) => ({
  id: project.id,
  name: project.name,
  status: project.status,
  connectionIds: project.connectionIds,
  budgetCount: project.budgetCount,
  violationCount: project.violationCount,
  createdAt: timestampFromDate(project.createdAt),
  updatedAt: timestampFromDate(project.updatedAt),
  approvalRules: project.approvalRules
    ? {
        requireApprovalAbove: project.approvalRules.requireApprovalAbove ?? undefined,
        approvers: project.approvalRules.approvers,
      }
    : undefined,
});

const projectDetailMessage = (project: ProjectDetail) => ({
  ...projectMessage(project),
  budgets: project.budgets,
});

export function projectsRpc(
  projects: Projects,
  once: IdempotentCalls,
): ServiceImpl<typeof budgets.ProjectsService> {
  return {
    createProject: (request, ctx) =>
      once(ctx, 'CreateProject', budgets.ProjectSchema, projectMessage, (effect) =>
        projects.createProject(
          teamOf(ctx),
          { name: request.name, connectionIds: request.connectionIds, approvalRules: request.approvalRules },
          effect,
        ),
      ),
    async getProject(request, ctx) {
      return projectDetailMessage(await projects.getProject(teamOf(ctx), request.id));
    },
    async listProjects(request, ctx) {
      const { projects: list, meta } = await projects.listProjects(teamOf(ctx), {
        status: request.status,
        connectionId: request.connectionId,
        page: request.page?.page,
        perPage: request.page?.perPage,
      });
      return { projects: list.map(projectMessage), meta };
    },
    async updateProject(request, ctx) {
      const teamId = teamOf(ctx);
      await projects.updateProject(teamId, request.id, {
        name: request.name,
        status: request.status,
        connectionIds: request.connectionIds?.values,
        approvalRules: request.clearApprovalRules ? null : request.approvalRules,
      });
      return projectDetailMessage(await projects.getProject(teamId, request.id));
    },
    async deleteProject(request, ctx) {
      await projects.deleteProject(teamOf(ctx), request.id);
      return {};
    },
  };
}

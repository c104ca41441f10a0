import { budgets } from '@costgov/contracts';
import { messageWriter, teamScoped, type ServiceImpl } from '@costgov/rpc';
import type { IdempotentCalls } from '@costgov/runtime';
import type { Budgets } from './budgets';

export const budgetMessage = messageWriter(budgets.BudgetSchema);
const periodsMessage = messageWriter(budgets.ListConnectionBudgetPeriodsResponseSchema);

export function budgetsRpc(
  budgetsDomain: Budgets,
  once: IdempotentCalls,
): ServiceImpl<typeof budgets.BudgetsService> {
  return {
    createBudget: teamScoped((request, ctx) =>
      once(ctx, 'CreateBudget', budgets.BudgetSchema, budgetMessage, (effect) =>
        budgetsDomain.createBudget(
          ctx.teamId,
          {
            projectId: request.projectId,
            name: request.name,
            amount: request.amount,
            currency: request.currency,
            period: request.period,
            thresholds: request.thresholds,
            tags: request.tags,
          },
          effect,
        ),
      ),
    ),
    getBudget: teamScoped(async (request, { teamId }) =>
      budgetMessage(await budgetsDomain.getBudget(teamId, request.id)),
    ),
    listBudgets: teamScoped(async (request, { teamId }) => {
      const { budgets: list, meta } = await budgetsDomain.listBudgets(teamId, {
        projectId: request.projectId,
        status: request.status,
        sort: request.sort,
        page: request.page?.page,
        perPage: request.page?.perPage,
      });
      return { budgets: list.map(budgetMessage), meta };
    }),
    updateBudget: teamScoped(async (request, { teamId }) =>
      budgetMessage(
        await budgetsDomain.updateBudget(teamId, request.id, {
          name: request.name,
          amount: request.amount,
          currency: request.currency,
          period: request.period,
          thresholds: request.thresholds?.values,
          tags: request.tags?.values,
          status: request.status,
        }),
      ),
    ),
    deleteBudget: teamScoped(async (request, { teamId }) => {
      await budgetsDomain.deleteBudget(teamId, request.id);
      return {};
    }),
    listConnectionBudgetPeriods: teamScoped(async (request, { teamId }) =>
      periodsMessage({ periods: await budgetsDomain.connectionBudgetPeriods(teamId, request.connectionId) }),
    ),
  };
}

import { timestampFromDate } from '@bufbuild/protobuf/wkt';
import { budgets } from '@costgov/contracts';
import { BadRequestError } from '@costgov/errors';
import type { CallContext, ServiceImpl } from '@costgov/rpc';
import type { IdempotentCalls } from '@costgov/runtime';
import type { Budgets } from './budgets';
import type { Budget } from './record';

function teamOf(ctx: CallContext): string {
  if (!ctx.teamId) throw new BadRequestError('The call carries no team (x-team-id metadata).');
  return ctx.teamId;
}

export const budgetMessage = (budget: Budget) => ({
  id: budget.id,
  projectId: budget.projectId,
  name: budget.name,
  amount: budget.amount,
  currency: budget.currency,
  period: budget.period,
  currentSpend: budget.currentSpend,
  percentageUsed: budget.percentageUsed,
  status: budget.status,
  thresholds: budget.thresholds.map((t) => ({
    percentage: t.percentage,
    notifiedAt: t.notifiedAt ? timestampFromDate(t.notifiedAt) : undefined,
  })),
  tags: budget.tags,
  forecastSpend: budget.forecastSpend,
  unconvertedSpend: budget.unconvertedSpend,
  periodStart: timestampFromDate(budget.periodStart),
  periodEnd: timestampFromDate(budget.periodEnd),
  createdAt: timestampFromDate(budget.createdAt),
  updatedAt: timestampFromDate(budget.updatedAt),
  evaluatedAt: budget.evaluatedAt ? timestampFromDate(budget.evaluatedAt) : undefined,
});

export function budgetsRpc(
  budgetsDomain: Budgets,
  once: IdempotentCalls,
): ServiceImpl<typeof budgets.BudgetsService> {
  return {
    createBudget: (request, ctx) =>
      once(ctx, 'CreateBudget', budgets.BudgetSchema, budgetMessage, (effect) =>
        budgetsDomain.createBudget(
          teamOf(ctx),
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
    async getBudget(request, ctx) {
      return budgetMessage(await budgetsDomain.getBudget(teamOf(ctx), request.id));
    },
    async listBudgets(request, ctx) {
      const { budgets: list, meta } = await budgetsDomain.listBudgets(teamOf(ctx), {
        projectId: request.projectId,
        status: request.status,
        sort: request.sort,
        page: request.page?.page,
        perPage: request.page?.perPage,
      });
      return { budgets: list.map(budgetMessage), meta };
    },
    async updateBudget(request, ctx) {
      return budgetMessage(
        await budgetsDomain.updateBudget(teamOf(ctx), request.id, {
          name: request.name,
          amount: request.amount,
          currency: request.currency,
          period: request.period,
          thresholds: request.thresholds?.values,
          tags: request.tags?.values,
          status: request.status,
        }),
      );
    },
    async deleteBudget(request, ctx) {
      await budgetsDomain.deleteBudget(teamOf(ctx), request.id);
      return {};
    },
  };
}

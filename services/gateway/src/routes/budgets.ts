import { budgets } from '@costgov/contracts';
import type { RpcClient } from '@costgov/rpc';
import { operationTable } from '../rest/operation-table';

/** /v1/guard/budgets: requests and answers are the messages' fields under their REST names. */
export const budgetOperations = (client: RpcClient<typeof budgets.BudgetsService>) =>
  operationTable(budgets.BudgetsService, client, {
    listBudgets: { rpc: 'listBudgets' },
    createBudget: { rpc: 'createBudget' },
    getBudget: { rpc: 'getBudget' },
    updateBudget: { rpc: 'updateBudget' },
    deleteBudget: { rpc: 'deleteBudget' },
  });

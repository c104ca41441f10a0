import { scanner } from '@costgov/contracts';
import type { RpcClient } from '@costgov/rpc';
import { operationTable } from '../rest/operation-table';

/** /v1/guard/findings, and the rule catalogue behind them (/v1/guard/rules, the same for every team). */
export const findingOperations = (client: RpcClient<typeof scanner.FindingsService>) =>
  operationTable(scanner.FindingsService, client, {
    listFindings: { rpc: 'listFindings' },
    updateFinding: { rpc: 'updateFinding', acting: true },
    listRules: { rpc: 'listRules' },
  });

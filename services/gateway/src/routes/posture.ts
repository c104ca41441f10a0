import { scanner } from '@costgov/contracts';
import type { RpcClient } from '@costgov/rpc';
import { operationTable } from '../rest/operation-table';

/** /v1/guard/cost-posture: the scanner decides the day (today when `date` is not given, past, future). */
export const postureOperations = (client: RpcClient<typeof scanner.PostureService>) =>
  operationTable(scanner.PostureService, client, {
    getCostPosture: { rpc: 'getCostPosture' },
  });

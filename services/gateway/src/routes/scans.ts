import { scanner } from '@costgov/contracts';
import type { RpcClient } from '@costgov/rpc';
import { operationTable } from '../rest/operation-table';

/**
 * /v1/guard/scans: a created scan is accepted (202) and queued; a worker runs it. The list leaves the
 * findings out, the single read has them: the document's schemas say which.
 */
export const scanOperations = (client: RpcClient<typeof scanner.ScansService>) =>
  operationTable(scanner.ScansService, client, {
    listScans: { rpc: 'listScans' },
    createScan: { rpc: 'createScan' },
    getScan: { rpc: 'getScan' },
  });

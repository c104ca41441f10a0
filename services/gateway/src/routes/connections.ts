import { costs } from '@costgov/contracts';
import type { RpcClient } from '@costgov/rpc';
import { operationTable } from '../rest/operation-table';

/** /v1/guard/connections (an extension; uploads are routes/cost-data.ts): fields under their REST names. */
export const connectionOperations = (client: RpcClient<typeof costs.ConnectionsService>) =>
  operationTable(costs.ConnectionsService, client, {
    listConnections: { rpc: 'listConnections' },
    createConnection: { rpc: 'createConnection' },
    getConnection: { rpc: 'getConnection' },
    updateConnection: { rpc: 'updateConnection' },
    deleteConnection: { rpc: 'deleteConnection' },
  });

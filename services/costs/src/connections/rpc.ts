import { costs } from '@costgov/contracts';
import { messageWriter, teamScoped, type ServiceImpl } from '@costgov/rpc';
import type { IdempotentCalls } from '@costgov/runtime';
import type { Connections } from './connections';

const connectionMessage = messageWriter(costs.ConnectionSchema);

export function connectionsRpc(
  connections: Connections,
  once: IdempotentCalls,
): ServiceImpl<typeof costs.ConnectionsService> {
  return {
    createConnection: teamScoped((request, ctx) =>
      once(ctx, 'CreateConnection', costs.ConnectionSchema, connectionMessage, (effect) =>
        connections.createConnection(ctx.teamId, { name: request.name, provider: request.provider }, effect),
      ),
    ),
    getConnection: teamScoped(async (request, { teamId }) =>
      connectionMessage(await connections.getConnection(teamId, request.id)),
    ),
    listConnections: teamScoped(async (request, { teamId }) => {
      const { connections: list, meta } = await connections.listConnections(teamId, {
        provider: request.provider,
        status: request.status,
        page: request.page?.page,
        perPage: request.page?.perPage,
      });
      return { connections: list.map(connectionMessage), meta };
    }),
    updateConnection: teamScoped(async (request, { teamId }) =>
      connectionMessage(
        await connections.updateConnection(teamId, request.id, {
          name: request.name,
          status: request.status,
        }),
      ),
    ),
    deleteConnection: teamScoped(async (request, { teamId }) => {
      await connections.deleteConnection(teamId, request.id);
      return {};
    }),
    findMissingConnections: teamScoped(async (request, { teamId }) => ({
      missingIds: await connections.findMissingConnections(teamId, request.ids),
    })),
  };
}

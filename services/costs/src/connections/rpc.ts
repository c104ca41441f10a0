import { timestampFromDate } from '@bufbuild/protobuf/wkt';
import { costs } from '@costgov/contracts';
import { BadRequestError } from '@costgov/errors';
import type { CallContext, ServiceImpl } from '@costgov/rpc';
import type { IdempotentCalls } from '@costgov/runtime';
import type { Connection, Connections } from './connections';

function teamOf(ctx: CallContext): string {
  if (!ctx.teamId) throw new BadRequestError('The call carries no team (x-team-id metadata).');
  return ctx.teamId;
}

const connectionMessage = (connection: Connection) => ({
  id: connection.id,
  name: connection.name,
  provider: connection.provider,
  status: connection.status,
  lastIngestedAt: connection.lastIngestedAt ? timestampFromDate(connection.lastIngestedAt) : undefined,
  createdAt: timestampFromDate(connection.createdAt),
  updatedAt: timestampFromDate(connection.updatedAt),
});

export function connectionsRpc(
  connections: Connections,
  once: IdempotentCalls,
): ServiceImpl<typeof costs.ConnectionsService> {
  return {
    createConnection: (request, ctx) =>
      once(ctx, 'CreateConnection', costs.ConnectionSchema, connectionMessage, (effect) =>
        connections.createConnection(teamOf(ctx), { name: request.name, provider: request.provider }, effect),
      ),
    async getConnection(request, ctx) {
      return connectionMessage(await connections.getConnection(teamOf(ctx), request.id));
    },
    async listConnections(request, ctx) {
      const { connections: list, meta } = await connections.listConnections(teamOf(ctx), {
        provider: request.provider,
        status: request.status,
        page: request.page?.page,
        perPage: request.page?.perPage,
      });
      return { connections: list.map(connectionMessage), meta };
    },
    async updateConnection(request, ctx) {
      return connectionMessage(
        await connections.updateConnection(teamOf(ctx), request.id, {
          name: request.name,
          status: request.status,
        }),
      );
    },
    async deleteConnection(request, ctx) {
      await connections.deleteConnection(teamOf(ctx), request.id);
      return {};
    },
    async findMissingConnections(request, ctx) {
      return { missingIds: await connections.findMissingConnections(teamOf(ctx), request.ids) };
    },
  };
}

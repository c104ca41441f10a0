import { Router } from 'express';
import { timestampDate, type Timestamp } from '@bufbuild/protobuf/wkt';
import type { costs } from '@costgov/contracts';
import type { RpcClient } from '@costgov/rpc';
import { sendData } from '../http/envelope';
import type { RequestValidators } from '../openapi/validator';
import { callContext } from '../http/call-context';
import { metaJson, pageOf } from '../http/paging';

type ConnectionsClient = RpcClient<typeof costs.ConnectionsService>;

const iso = (ts: Timestamp | undefined) => (ts ? timestampDate(ts).toISOString() : null);

export const connectionJson = (c: costs.Connection) => ({
  id: c.id,
  name: c.name,
  provider: c.provider,
  status: c.status,
  last_ingested_at: iso(c.lastIngestedAt),
  created_at: iso(c.createdAt),
  updated_at: iso(c.updatedAt),
});

/** REST ↔ gRPC mapping of /v1/guard/connections (an extension); each route first validates its operation. */
export function connectionRoutes(client: ConnectionsClient, validate: RequestValidators): Router {
  const router = Router();

  router.get('/', validate('listConnections'), async (req, res) => {
    const query = req.query as { provider?: string; status?: string; page?: string; per_page?: string };
    const result = await client.listConnections(
      {
        provider: query.provider,
        status: query.status,
        page: pageOf(query),
      },
      callContext(req),
    );
    const meta = result.meta!;
    sendData(res, 200, result.connections.map(connectionJson), metaJson(meta));
  });

  router.post('/', validate('createConnection'), async (req, res) => {
    const body = req.body as { name: string; provider: string };
    const connection = await client.createConnection(
      { name: body.name, provider: body.provider },
      callContext(req),
    );
    res.setHeader('Location', `/v1/guard/connections/${connection.id}`);
    sendData(res, 201, connectionJson(connection));
  });

  router.get('/:id', validate('getConnection'), async (req, res) => {
    const connection = await client.getConnection({ id: String(req.params.id) }, callContext(req));
    sendData(res, 200, connectionJson(connection));
  });

  router.patch('/:id', validate('updateConnection'), async (req, res) => {
    const body = req.body as { name?: string; status?: string };
    const connection = await client.updateConnection(
      { id: String(req.params.id), name: body.name, status: body.status },
      callContext(req),
    );
    sendData(res, 200, connectionJson(connection));
  });

  router.delete('/:id', validate('deleteConnection'), async (req, res) => {
    await client.deleteConnection({ id: String(req.params.id) }, callContext(req));
    res.status(204).end();
  });

  return router;
}

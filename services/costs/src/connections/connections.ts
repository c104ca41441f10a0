import { create } from '@bufbuild/protobuf';
import type { Outbox } from '@costgov/bus';
import { events } from '@costgov/contracts';
import {
  enumFilter,
  limitOffset,
  pageMeta,
  pageOf,
  type Db,
  type PageMeta,
  type Queryable,
} from '@costgov/db';
import { ConflictError, NotFoundError, Violations } from '@costgov/errors';
import { looksLikeId, type IdGenerator } from '@costgov/ids';
import type { KeyedEffect } from '@costgov/runtime';
import {
  checkName,
  checkProvider,
  checkStatus,
  connectionStatuses,
  providers,
  type ConnectionStatus,
  type Provider,
} from './validation';

export interface Connection {
  id: string;
  teamId: string;
  name: string;
  provider: Provider;
  status: ConnectionStatus;
  lastIngestedAt: Date | null;
  createdAt: Date;
  updatedAt: Date;
}

export interface CreateConnectionInput {
  name: string;
  provider: string;
}

export interface UpdateConnectionInput {
  name?: string;
  status?: string;
}

export interface ListConnectionsInput {
  provider?: string;
  status?: string;
  page?: number;
  perPage?: number;
}

interface ConnectionRow {
  id: string;
  team_id: string;
  name: string;
  provider: Provider;
  status: ConnectionStatus;
  last_ingested_at: Date | null;
  created_at: Date;
  updated_at: Date;
}

const toConnection = (row: ConnectionRow): Connection => ({
  id: row.id,
  teamId: row.team_id,
  name: row.name,
  provider: row.provider,
  status: row.status,
  lastIngestedAt: row.last_ingested_at,
  createdAt: row.created_at,
  updatedAt: row.updated_at,
});

/** An id that cannot be a connection's is not found, without a query. */
function checkConnectionId(id: string): void {
  if (!looksLikeId('connection', id)) throw new NotFoundError('Connection', id);
}

const isUniqueViolation = (error: unknown) => (error as { code?: string }).code === '23505';
const duplicateName = (name: string) =>
  new ConflictError(`A connection named '${name}' already exists in this team.`, [
    { field: 'name', message: 'is taken' },
  ]);

export function connectionsFactory({
  db,
  outbox,
  newId,
  now,
}: {
  db: Db;
  outbox: Outbox;
  newId: IdGenerator;
  now: () => Date;
}) {
  async function publish(tx: Queryable, type: 'created' | 'updated' | 'deleted', connection: Connection) {
    await outbox.addMessage(tx, {
      type: `costs.connection.${type}`,
      subject: connection.id,
      schema: events.ConnectionChangedSchema,
      message: create(events.ConnectionChangedSchema, {
        connectionId: connection.id,
        teamId: connection.teamId,
        name: connection.name,
        provider: connection.provider,
        status: connection.status,
      }),
    });
  }

  async function find(tx: Queryable, teamId: string, id: string, lock = false): Promise<Connection> {
    checkConnectionId(id);
    const { rows } = await tx.query<ConnectionRow>(
      `SELECT * FROM connections WHERE team_id = $1 AND id = $2${lock ? ' FOR UPDATE' : ''}`,
      [teamId, id],
    );
    if (!rows[0]) throw new NotFoundError('Connection', id);
    return toConnection(rows[0]);
  }

  /** `effect`: the caller's Idempotency-Key, recorded with the connection (libs/runtime idempotency.ts). */
  async function createConnection(
    teamId: string,
    input: CreateConnectionInput,
    effect?: KeyedEffect<Connection>,
  ): Promise<Connection> {
    const violations = new Violations();
    const name = checkName(violations, input.name);
    const provider = checkProvider(violations, input.provider);
    violations.throwIfAny();
    try {
      return await db.transaction(async (tx) => {
        const { rows } = await tx.query<ConnectionRow>(
          `INSERT INTO connections (id, team_id, name, provider, created_at, updated_at)
           VALUES ($1, $2, $3, $4, $5, $5) RETURNING *`,
          [newId('connection'), teamId, name, provider, now()],
        );
        const connection = toConnection(rows[0]!);
        await publish(tx, 'created', connection);
        await effect?.record(tx, connection);
        return connection;
      });
    } catch (error) {
      if (isUniqueViolation(error)) throw duplicateName(name);
      throw error;
    }
  }

  async function getConnection(teamId: string, id: string): Promise<Connection> {
    return find(db, teamId, id);
  }

  /** Newest first, filtered by provider and status. */
  async function listConnections(
    teamId: string,
    input: ListConnectionsInput,
  ): Promise<{ connections: Connection[]; meta: PageMeta }> {
    const page = pageOf(input);
    const provider = enumFilter('provider', input.provider, providers);
    const status = enumFilter('status', input.status, connectionStatuses);
    const where = ['team_id = $1'];
    const params: unknown[] = [teamId];
    if (provider !== undefined) where.push(`provider = $${params.push(provider)}`);
    if (status !== undefined) where.push(`status = $${params.push(status)}`);
    const filter = where.join(' AND ');
    const { limit, offset } = limitOffset(page);
    const [count, list] = await Promise.all([
      db.query<{ n: number }>(`SELECT count(*)::int AS n FROM connections WHERE ${filter}`, params),
      db.query<ConnectionRow>(
        `SELECT * FROM connections WHERE ${filter}
         ORDER BY created_at DESC, id DESC LIMIT ${limit} OFFSET ${offset}`,
        params,
      ),
    ]);
    return { connections: list.rows.map(toConnection), meta: pageMeta(page, count.rows[0]!.n) };
  }

  async function updateConnection(
    teamId: string,
    id: string,
    input: UpdateConnectionInput,
  ): Promise<Connection> {
    const violations = new Violations();
    const name = input.name === undefined ? undefined : checkName(violations, input.name);
    const status = input.status === undefined ? undefined : checkStatus(violations, input.status);
    violations.throwIfAny();
    try {
      return await db.transaction(async (tx) => {
        const current = await find(tx, teamId, id, true);
        const next = { ...current, name: name ?? current.name, status: status ?? current.status };
        if (next.name === current.name && next.status === current.status) return current;
        const { rows } = await tx.query<{ updated_at: Date }>(
          `UPDATE connections SET name = $3, status = $4, updated_at = $5
           WHERE team_id = $1 AND id = $2 RETURNING updated_at`,
          [teamId, id, next.name, next.status, now()],
        );
        const updated = { ...next, updatedAt: rows[0]!.updated_at };
        await publish(tx, 'updated', updated);
        return updated;
      });
    } catch (error) {
      if (isUniqueViolation(error) && name !== undefined) throw duplicateName(name);
      throw error;
    }
  }

  /**
   * Removes the connection: its cost data stops counting at once (spend reads only existing
   * connections) and is purged on `costs.connection.deleted` (purge.ts), so the request stays fast
   * whatever the size of that data.
   */
  async function deleteConnection(teamId: string, id: string): Promise<void> {
    await db.transaction(async (tx) => {
      // The lock waits for an upload's swap in progress (it holds the row FOR SHARE); a later swap
      // finds no connection and is abandoned.
      const connection = await find(tx, teamId, id, true);
      await tx.query('DELETE FROM connections WHERE team_id = $1 AND id = $2', [teamId, id]);
      await publish(tx, 'deleted', connection);
    });
  }

  /** Which of `ids` are not connections of the team, in the order asked, each once. */
  async function findMissingConnections(teamId: string, ids: string[]): Promise<string[]> {
    const asked = [...new Set(ids)];
    const candidates = asked.filter((id) => looksLikeId('connection', id));
    const { rows } =
      candidates.length === 0
        ? { rows: [] }
        : await db.query<{ id: string }>(
            'SELECT id FROM connections WHERE team_id = $1 AND id = ANY ($2::text[])',
            [teamId, candidates],
          );
    const found = new Set(rows.map((row) => row.id));
    return asked.filter((id) => !found.has(id));
  }

  return {
    createConnection,
    getConnection,
    listConnections,
    updateConnection,
    deleteConnection,
    findMissingConnections,
  };
}

export type Connections = ReturnType<typeof connectionsFactory>;

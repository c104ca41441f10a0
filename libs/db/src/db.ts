import { mkdirSync } from 'node:fs';
import path from 'node:path';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { PGlite } from '@electric-sql/pglite';
import { pg_trgm } from '@electric-sql/pglite/contrib/pg_trgm';
import pg from 'pg';
import { from as copyFrom } from 'pg-copy-streams';
import type { Logger } from '@costgov/log';
import { unavailableOr } from './unavailable';

export interface QueryResult<R> {
  rows: R[];
  rowCount: number;
}

/** Something SQL can be sent to: the database itself, or a transaction on it. */
export interface QueryOptions {
  /**
   * Postgres: prepares the statement under this name once per connection and then only binds and executes
   * it, so a hot read is not parsed and planned again at every call. The name must be unique to the SQL
   * text, and the statement should name its columns (not `*`): a column added by a migration would
   * otherwise change the prepared statement's result type and fail it on every open connection. PGlite
   * ignores it.
   */
  name?: string;
}

export interface Queryable {
  query<R = Record<string, unknown>>(
    sql: string,
    params?: unknown[],
    options?: QueryOptions,
  ): Promise<QueryResult<R>>;
  /** Runs a script of several statements without parameters (migrations). */
  exec(sql: string): Promise<void>;
}

/** A service's own database: real Postgres (one schema per service) or PGlite (one database per service). */
export interface Db extends Queryable {
  readonly kind: 'postgres' | 'pglite';
  /** Runs `fn` in one transaction: committed when it resolves, rolled back when it throws. */
  transaction<T>(fn: (tx: Queryable) => Promise<T>): Promise<T>;
  /**
   * Calls `onNotify` for each NOTIFY on `channel` (a lower-case identifier) once its transaction commits;
   * on Postgres over a connection of its own, whose loss `onLost` is told of (listen again to resume).
   */
  listen?(channel: string, onNotify: () => void, onLost?: (error: Error) => void): Promise<Listening>;
  /**
   * Listens on `channels` over a connection of its own and sends notifications over that same connection.
   * Postgres delivers notifications in commit order, so a notification this subscription sends arrives
   * after every notification of a transaction that committed before it was sent: a barrier. `onLost` is
   * told when the connection goes (subscribe again to resume; notifications meanwhile are lost).
   */
  subscribe?(
    channels: string[],
    onNotify: (channel: string, payload: string) => void,
    onLost?: (error: Error) => void,
  ): Promise<Subscription>;
  /**
   * Bulk-loads COPY text-format lines into `into` (`table (col, ...)`), outside any transaction; each chunk
   * holds whole lines. Postgres streams them into one `COPY ... FROM STDIN`; PGlite runs one
   * `COPY ... FROM '/dev/blob'` per chunk (its fastest path). Resolves with the rows loaded.
   */
  copyIn(into: string, chunks: AsyncIterable<string>): Promise<number>;
  close(): Promise<void>;
}

export interface Listening {
  close(): Promise<void>;
}

export interface Subscription extends Listening {
  /** Sends a notification on `channel` (committed at once; it comes back to this subscription too). */
  notify(channel: string, payload: string): Promise<void>;
}

const channelName = /^[a-z_][a-z0-9_]*$/;

function assertChannel(channel: string): void {
  if (!channelName.test(channel)) throw new Error(`Invalid channel name '${channel}'.`);
}

export interface OpenDbOptions {
  /** Owner of the data; names the Postgres schema and the PGlite folder. */
  service: string;
  /** Postgres connection string; without it, PGlite is used. */
  databaseUrl?: string;
  /** Postgres schema; defaults to the service name. */
  schema?: string;
  /** PGlite: folder that holds the service's database folder; `memory` keeps it in memory. */
  dataDir?: string;
  /** Postgres: pool size. */
  maxConnections?: number;
  /**
   * Postgres: milliseconds to get a connection (a new one, or a free one from a full pool) before the
   * query fails as unavailable. Below the gRPC deadline, so a request during an outage gets 503 at once.
   */
  connectTimeoutMs?: number;
  /** Where lost connections are reported. */
  logger?: Logger;
  /**
   * Postgres: run statements given a `name` as prepared statements (default true). Off behind a pooler in
   * transaction mode that does not track prepared statements (PgBouncer before 1.21, or with
   * `max_prepared_statements = 0`), where a statement prepared on one server connection is missing on the next.
   */
  preparedStatements?: boolean;
  /**
   * PGlite in memory: the image (`dumpDataDir`) of a database to start from instead of an empty cluster,
   * which skips initdb (about 2 s of CPU; tests start hundreds of databases).
   */
  template?: Blob;
}

const schemaName = /^[a-z_][a-z0-9_]*$/;

export async function openDb(options: OpenDbOptions): Promise<Db> {
  return options.databaseUrl ? openPostgres(options.databaseUrl, options) : openPglite(options);
}

/** The server part of a connection string, for messages: no user or password. */
const serverOf = (url: string): string => {
  try {
    const parsed = new URL(url);
    return `${parsed.host}${parsed.pathname}`;
  } catch {
    return 'the configured server';
  }
};

async function openPostgres(url: string, options: OpenDbOptions): Promise<Db> {
  const schema = options.schema ?? options.service;
  if (!schemaName.test(schema)) throw new Error(`Invalid schema name '${schema}'.`);
  const connectTimeoutMs = options.connectTimeoutMs ?? 3_000;
  // Numeric and bigint columns come back as JS numbers; the amounts this system stores fit a double.
  const types = {
    getTypeParser: (oid: number, format?: string) =>
      oid === 1700 || oid === 20
        ? (value: string) => Number(value)
        : pg.types.getTypeParser(oid, format as 'text'),
  };
  const setup = new pg.Client({ connectionString: url, connectionTimeoutMillis: connectTimeoutMs });
  setup.on('error', () => undefined); // a drop while connected fails the pending query instead
  try {
    await setup.connect();
    await setup.query(`CREATE SCHEMA IF NOT EXISTS ${schema}`);
  } catch (error) {
    // Two processes creating the schema at once race on the catalog; the loser finds it there.
    if ((error as { code?: string }).code !== '23505') {
      const reason =
        error instanceof Error ? error.message || (error as { code?: string }).code : String(error);
      throw new Error(`Cannot open the ${options.service} database at ${serverOf(url)}: ${reason}`, {
        cause: error,
      });
    }
  } finally {
    await setup.end().catch(() => undefined);
  }
  const pool = new pg.Pool({
    connectionString: url,
    max: options.maxConnections ?? 10,
    options: `-c search_path=${schema},public`,
    types,
    connectionTimeoutMillis: connectTimeoutMs,
    idleTimeoutMillis: 30_000,
    // Finds a connection whose server vanished without a FIN (a dead machine) while it sits idle.
    keepAlive: true,
    keepAliveInitialDelayMillis: 10_000,
  });
  // An idle connection that breaks leaves the pool; the next query opens a new one once the server is back.
  pool.on('error', (error) => options.logger?.warn({ err: error }, 'database connection lost'));
  // pg-pool takes its idle listener off a connection as it hands it out, and the taker attaches its own
  // only a moment later. A FATAL read in the same chunk as the answer that released the connection
  // (its server died as it answered) falls between the two: without a listener of the connection's
  // own it would end the process. The query or transaction that holds the connection fails instead.
  pool.on('connect', (client) => client.on('error', () => undefined));
  const prepared = options.preparedStatements ?? true;
  const wrap = (target: pg.Pool | pg.PoolClient): Queryable => ({
    async query(sql, params, queryOptions) {
      const values = params as unknown[];
      try {
        const name = prepared ? queryOptions?.name : undefined;
        const result = await target
          .query(name ? { name, text: sql, values } : { text: sql, values })
          .catch((error: unknown) => {
            // A migration changed the type of a column the prepared statement returns: Postgres refuses
            // it on every connection that prepared it ("cached plan must not change result type"), and
            // pg does not prepare it again. Sent unnamed, the statement works until the connection goes.
            if (name && (error as { code?: string }).code === '0A000')
              return target.query({ text: sql, values });
            throw error;
          });
        return { rows: result.rows, rowCount: result.rowCount ?? 0 };
      } catch (error) {
        throw unavailableOr(error);
      }
    },
    async exec(sql) {
      try {
        await target.query(sql);
      } catch (error) {
        throw unavailableOr(error);
      }
    },
  });
  const subscribe: NonNullable<Db['subscribe']> = async (channels, onNotify, onLost) => {
    channels.forEach(assertChannel);
    const client = new pg.Client({
      connectionString: url,
      connectionTimeoutMillis: connectTimeoutMs,
      keepAlive: true,
      keepAliveInitialDelayMillis: 10_000,
      // A barrier notification waits for no disk flush: it records nothing worth keeping.
      options: '-c synchronous_commit=off',
      // Operators (and tests) tell these connections apart in pg_stat_activity: schema, first channel.
      application_name: `costgov ${schema} ${channels[0]}`.slice(0, 63),
    });
    let closing = false;
    let lost = false;
    const lose = (error: Error) => {
      if (closing || lost) return;
      lost = true;
      onLost?.(error);
      void client.end().catch(() => undefined);
    };
    client.on('error', lose); // without a listener, a dropped connection would end the process
    client.on('end', () => lose(new Error('The subscribed connection was closed.')));
    client.on('notification', (message) => {
      if (channels.includes(message.channel)) onNotify(message.channel, message.payload ?? '');
    });
    try {
      await client.connect();
      for (const channel of channels) await client.query(`LISTEN ${channel}`);
      // Lost while the last LISTEN was answered: onLost ran before the caller had the subscription.
      if (lost) throw new Error('The subscribed connection was lost while subscribing.');
    } catch (error) {
      closing = true;
      await client.end().catch(() => undefined);
      throw unavailableOr(error);
    }
    return {
      async notify(channel, payload) {
        try {
          await client.query('SELECT pg_notify($1, $2)', [channel, payload]);
        } catch (error) {
          throw unavailableOr(error);
        }
      },
      async close() {
        closing = true;
        await client.end().catch(() => undefined);
      },
    };
  };
  return {
    kind: 'postgres',
    ...wrap(pool),
    async transaction(fn) {
      let client: pg.PoolClient;
      try {
        client = await pool.connect();
      } catch (error) {
        throw unavailableOr(error);
      }
      // A checked-out client has no listener of the pool's: without one, a connection dropped between
      // two statements would be an unhandled 'error' event and end the process.
      let broken: Error | undefined;
      const onError = (error: Error) => (broken ??= error);
      client.on('error', onError);
      try {
        await client.query('BEGIN');
        const result = await fn(wrap(client));
        await client.query('COMMIT');
        return result;
      } catch (error) {
        if (!broken) await client.query('ROLLBACK').catch((rollback: Error) => (broken ??= rollback));
        throw unavailableOr(error);
      } finally {
        client.off('error', onError);
        client.release(broken); // a broken connection is closed rather than reused
      }
    },
    // One channel, notifications without their payload: a subscription that sends nothing.
    listen: (channel, onNotify, onLost) => subscribe([channel], () => onNotify(), onLost),
    subscribe,
    async copyIn(into, chunks) {
      let client: pg.PoolClient;
      try {
        client = await pool.connect();
      } catch (error) {
        throw unavailableOr(error);
      }
      let broken: Error | undefined;
      const onError = (error: Error) => (broken ??= error);
      client.on('error', onError);
      try {
        const copy = client.query(copyFrom(`COPY ${into} FROM STDIN`));
        await pipeline(Readable.from(chunks), copy);
        return copy.rowCount ?? 0;
      } catch (error) {
        // A COPY cut off mid-stream leaves the connection in an unknown state: it is not reused.
        broken ??= error instanceof Error ? error : new Error(String(error));
        throw unavailableOr(error);
      } finally {
        client.off('error', onError);
        client.release(broken);
      }
    },
    close: () => pool.end(),
  };
}

async function openPglite(options: OpenDbOptions): Promise<Db> {
  const dataDir = options.dataDir ?? '.data';
  let location: string | undefined;
  if (dataDir !== 'memory') {
    location = path.resolve(dataDir, options.service);
    mkdirSync(location, { recursive: true });
  }
  const db = await PGlite.create(location, {
    extensions: { pg_trgm },
    ...(location === undefined && options.template ? { loadDataDir: options.template } : {}),
  });
  const parse = (value: string) => Number(value);
  db.parsers[1700] = parse; // numeric
  db.parsers[20] = parse; // bigint
  const wrap = (target: Pick<PGlite, 'query' | 'exec'>): Queryable => ({
    async query(sql, params) {
      const result = await target.query(sql, params as unknown[]);
      return { rows: result.rows as never[], rowCount: result.affectedRows ?? result.rows.length };
    },
    async exec(sql) {
      await target.exec(sql);
    },
  });
  const subscribe: NonNullable<Db['subscribe']> = async (channels, onNotify) => {
    channels.forEach(assertChannel);
    const unlisten = await Promise.all(
      channels.map((channel) => db.listen(channel, (payload) => onNotify(channel, payload))),
    );
    return {
      async notify(channel, payload) {
        await db.query('SELECT pg_notify($1, $2)', [channel, payload]);
      },
      async close() {
        await Promise.all(unlisten.map((stop) => stop()));
      },
    };
  };
  return {
    kind: 'pglite',
    ...wrap(db),
    transaction: (fn) => db.transaction((tx) => fn(wrap(tx))),
    listen: (channel, onNotify) => subscribe([channel], () => onNotify()),
    subscribe,
    async copyIn(into, chunks) {
      let rows = 0;
      for await (const chunk of chunks) {
        const result = await db.query(`COPY ${into} FROM '/dev/blob'`, [], { blob: new Blob([chunk]) });
        rows += result.affectedRows ?? 0;
      }
      return rows;
    },
    close: () => db.close(),
  };
}

import { mkdirSync } from 'node:fs';
import path from 'node:path';
import { PGlite } from '@electric-sql/pglite';
import { pg_trgm } from '@electric-sql/pglite/contrib/pg_trgm';
import pg from 'pg';

export interface QueryResult<R> {
  rows: R[];
  rowCount: number;
}

/** Something SQL can be sent to: the database itself, or a transaction on it. */
export interface Queryable {
  query<R = Record<string, unknown>>(sql: string, params?: unknown[]): Promise<QueryResult<R>>;
  /** Runs a script of several statements without parameters (migrations). */
  exec(sql: string): Promise<void>;
}

/** A service's own database: real Postgres (one schema per service) or PGlite (one database per service). */
export interface Db extends Queryable {
  readonly kind: 'postgres' | 'pglite';
  /** Runs `fn` in one transaction: committed when it resolves, rolled back when it throws. */
  transaction<T>(fn: (tx: Queryable) => Promise<T>): Promise<T>;
  close(): Promise<void>;
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
}

const schemaName = /^[a-z_][a-z0-9_]*$/;

export async function openDb(options: OpenDbOptions): Promise<Db> {
  return options.databaseUrl ? openPostgres(options.databaseUrl, options) : openPglite(options);
}

async function openPostgres(url: string, options: OpenDbOptions): Promise<Db> {
  const schema = options.schema ?? options.service;
  if (!schemaName.test(schema)) throw new Error(`Invalid schema name '${schema}'.`);
  // Numeric and bigint columns come back as JS numbers; the amounts this system stores fit a double.
  const types = {
    getTypeParser: (oid: number, format?: string) =>
      oid === 1700 || oid === 20
        ? (value: string) => Number(value)
        : pg.types.getTypeParser(oid, format as 'text'),
  };
  const setup = new pg.Client({ connectionString: url });
  await setup.connect();
  try {
    await setup.query(`CREATE SCHEMA IF NOT EXISTS ${schema}`);
  } catch (error) {
    // Two processes creating the schema at once race on the catalog; the loser finds it there.
    if ((error as { code?: string }).code !== '23505') throw error;
  } finally {
    await setup.end();
  }
  const pool = new pg.Pool({
    connectionString: url,
    max: options.maxConnections ?? 10,
    options: `-c search_path=${schema},public`,
    types,
  });
  pool.on('error', () => undefined); // an idle client's error surfaces on the next query instead
  const run: Queryable['query'] = async (sql, params) => {
    const result = await pool.query(sql, params as unknown[]);
    return { rows: result.rows, rowCount: result.rowCount ?? 0 };
  };
  return {
    kind: 'postgres',
    query: run,
    exec: async (sql) => {
      await pool.query(sql);
    },
    async transaction(fn) {
      const client = await pool.connect();
      try {
        await client.query('BEGIN');
        const result = await fn({
          query: async (sql, params) => {
            const r = await client.query(sql, params as unknown[]);
            return { rows: r.rows, rowCount: r.rowCount ?? 0 };
          },
          exec: async (sql) => {
            await client.query(sql);
          },
        });
        await client.query('COMMIT');
        return result;
      } catch (error) {
        await client.query('ROLLBACK').catch(() => undefined);
        throw error;
      } finally {
        client.release();
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
  const db = await PGlite.create(location, { extensions: { pg_trgm } });
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
  return {
    kind: 'pglite',
    ...wrap(db),
    transaction: (fn) => db.transaction((tx) => fn(wrap(tx))),
    close: () => db.close(),
  };
}

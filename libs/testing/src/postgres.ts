import { execFile, type ChildProcess } from 'node:child_process';
import { chownSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import pg from 'pg';
import { freePort, uniqueName } from './fresh';
import {
  findExecutable,
  isExecutable,
  killOnExit,
  osUser,
  postgresBinDirs,
  signalServer,
  spawnServer,
  waitForServer,
  type SpawnedServer,
} from './server-process';

/** A throwaway Postgres owned by one test file: its own data folder and port, killable at will. */
export interface PostgresServer {
  /** Connection string of the `postgres` database, user `postgres`, no password. */
  url: string;
  port: number;
  /** Everything the server printed lately. */
  output(): string;
  /** kill -9 of the postmaster and its backends; resolves once they are gone. */
  kill(): Promise<void>;
  /** Starts it again on the same port and data (crash recovery runs if it was killed). */
  start(): Promise<void>;
  /** Stops it and deletes its data. */
  close(): Promise<void>;
}

const run = promisify(execFile);

/** The folder holding initdb and postgres, or undefined when Postgres is not installed. */
export function postgresBinDir(): string | undefined {
  const onPath = findExecutable('initdb');
  const dirs = [process.env.POSTGRES_BIN_DIR, ...postgresBinDirs(), onPath && path.dirname(onPath)];
  return dirs.find(
    (dir): dir is string =>
      Boolean(dir) && isExecutable(path.join(dir!, 'initdb')) && isExecutable(path.join(dir!, 'postgres')),
  );
}

/** Why startPostgresServer cannot work here, or undefined when it can. */
export function postgresUnavailable(): string | undefined {
  if (!postgresBinDir()) return 'initdb and postgres not found (set POSTGRES_BIN_DIR)';
  if (process.getuid?.() === 0 && !osUser('postgres'))
    return 'running as root and there is no `postgres` OS user to run the server as';
  return undefined;
}

/**
 * initdb in a temporary folder, then postgres on a free loopback port. Postgres refuses to run as root,
 * so as root the server runs as the `postgres` OS user. fsync is off: a killed process loses nothing
 * the OS already has, and only a machine crash would need it.
 */
export async function startPostgresServer(): Promise<PostgresServer> {
  const unavailable = postgresUnavailable();
  if (unavailable) throw new Error(`Cannot start Postgres: ${unavailable}`);
  const bin = postgresBinDir()!;
  const port = await freePort();
  const dir = mkdtempSync(path.join(tmpdir(), 'costgov-pg-'));
  const user = process.getuid?.() === 0 ? osUser('postgres') : undefined;
  if (user) chownSync(dir, user.uid, user.gid);
  const dataDir = path.join(dir, 'data');
  const asOwner = { cwd: dir, ...(user ?? {}) };
  await run(
    path.join(bin, 'initdb'),
    ['-D', dataDir, '-U', 'postgres', '-A', 'trust', '-E', 'UTF8', '--no-sync'],
    {
      ...asOwner,
      env: { ...process.env, LC_ALL: 'C' },
    },
  ).catch((error: Error & { stderr?: string }) => {
    rmSync(dir, { recursive: true, force: true });
    throw new Error(`initdb failed: ${error.message}\n${error.stderr ?? ''}`);
  });

  const url = `postgres://postgres@127.0.0.1:${port}/postgres`;
  let server: SpawnedServer | undefined;
  const forget = killOnExit((): ChildProcess | undefined => server?.child);
  const accepts = async () => {
    const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 1_000 });
    client.on('error', () => undefined);
    try {
      await client.connect();
      await client.query('SELECT 1');
      return true;
    } finally {
      await client.end().catch(() => undefined);
    }
  };
  const start = async () => {
    server = spawnServer(
      path.join(bin, 'postgres'),
      [
        ...['-D', dataDir, '-p', String(port), '-k', dir],
        ...['-c', 'listen_addresses=127.0.0.1', '-c', 'fsync=off', '-c', 'max_connections=100'],
        ...['-c', 'shared_buffers=16MB', '-c', 'log_min_messages=warning'],
      ],
      { ...asOwner, env: { ...process.env, LC_ALL: 'C' } },
    );
    await waitForServer(`postgres on port ${port}`, server, accepts, 30_000);
  };
  const stop = async (signal: NodeJS.Signals) => {
    if (server) await signalServer(server.child, signal);
  };

  await start();
  return {
    url,
    port,
    output: () => server?.output() ?? '',
    kill: () => stop('SIGKILL'),
    start,
    async close() {
      await stop('SIGINT'); // fast shutdown: disconnects clients instead of waiting for them
      forget();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** A database of one test file's own on a running server, for processes that must share it. */
export interface TestDatabase {
  name: string;
  /** The server's connection string with this database. */
  url: string;
  /** Drops it, ending the connections still open. */
  drop(): Promise<void>;
}

/** Creates a fresh database (`<prefix>_<random>`) on the server of `serverUrl` (DATABASE_URL by default). */
export async function createTestDatabase(
  prefix: string,
  serverUrl = process.env.DATABASE_URL ?? '',
): Promise<TestDatabase> {
  const name = uniqueName(prefix);
  const admin = async (sql: string) => {
    const client = new pg.Client({ connectionString: serverUrl });
    await client.connect();
    try {
      await client.query(sql);
    } finally {
      await client.end();
    }
  };
  await admin(`CREATE DATABASE ${name}`);
  return {
    name,
    url: Object.assign(new URL(serverUrl), { pathname: `/${name}` }).toString(),
    drop: () => admin(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`),
  };
}

import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { UnavailableError } from '@costgov/errors';
import {
  eventually,
  freePort,
  postgresUnavailable,
  startPostgresServer,
  type PostgresServer,
} from '@costgov/testing';
import { migrate, openDb, type Db } from '../src';

const unavailable = postgresUnavailable();

/**
 * A Postgres of this file's own, killed and restarted under an open pool: the process must survive,
 * queries meanwhile fail fast as UnavailableError (503 at the gateway), and the pool heals by itself.
 */
describe.skipIf(unavailable)(
  `db during a Postgres outage${unavailable ? ` (skipped: ${unavailable})` : ''}`,
  () => {
    let server: PostgresServer;
    let db: Db;
    // Unhandled 'error' events end a real process; under vitest they surface as uncaught exceptions.
    const uncaught: unknown[] = [];
    const onUncaught = (error: unknown) => uncaught.push(error);

    beforeAll(async () => {
      process.on('uncaughtException', onUncaught);
      server = await startPostgresServer();
      db = await openDb({ service: 'outage', databaseUrl: server.url, connectTimeoutMs: 1_000 });
      await migrate(db, [{ name: '0001_items', sql: 'CREATE TABLE items (id int PRIMARY KEY)' }]);
    }, 60_000);

    afterAll(async () => {
      process.off('uncaughtException', onUncaught);
      await db?.close();
      await server?.close();
    });

    it('turns a connection terminated by the server (57P01) inside a transaction into UnavailableError', async () => {
      const admin = new pg.Client({ connectionString: server.url });
      await admin.connect();
      try {
        const failed = db.transaction(async (tx) => {
          const { rows } = await tx.query<{ pid: number }>('SELECT pg_backend_pid() AS pid');
          await admin.query('SELECT pg_terminate_backend($1)', [rows[0]!.pid]);
          await new Promise((resolve) => setTimeout(resolve, 100)); // the termination arrives between statements
          await tx.query('INSERT INTO items (id) VALUES (1)');
        });
        await expect(failed).rejects.toBeInstanceOf(UnavailableError);
        await expect(failed).rejects.toMatchObject({ code: 'service_unavailable' });
      } finally {
        await admin.end();
      }
      expect(uncaught).toEqual([]);
      // The broken connection left the pool: the next transaction works.
      await db.transaction((tx) => tx.query('INSERT INTO items (id) VALUES (2)'));
    });

    it('survives kill -9 of Postgres with a transaction open and idle connections in the pool', async () => {
      await Promise.all([1, 2, 3].map(() => db.query('SELECT pg_sleep(0.05)'))); // several idle clients
      let killed!: () => void;
      let inserted!: () => void;
      const afterKill = new Promise<void>((resolve) => (killed = resolve));
      const afterInsert = new Promise<void>((resolve) => (inserted = resolve));
      const open = db.transaction(async (tx) => {
        await tx.query('INSERT INTO items (id) VALUES (3)');
        inserted();
        await afterKill;
        await tx.query('INSERT INTO items (id) VALUES (4)');
      });
      open.catch(() => undefined); // asserted below, once the kill is done
      await afterInsert;
      await server.kill();
      await new Promise((resolve) => setTimeout(resolve, 200)); // the closed sockets reach the clients
      killed();
      await expect(open).rejects.toBeInstanceOf(UnavailableError);
      expect(uncaught).toEqual([]);
    });

    it('fails queries fast with UnavailableError while Postgres is down', async () => {
      for (const attempt of [
        () => db.query('SELECT 1'),
        () => db.exec('SELECT 1'),
        () => db.transaction((tx) => tx.query('SELECT 1')),
      ]) {
        const started = Date.now();
        await expect(attempt()).rejects.toBeInstanceOf(UnavailableError);
        expect(Date.now() - started).toBeLessThan(2_000);
      }
    });

    it('keeps other errors as they are', async () => {
      // Down, a syntax error cannot be told apart; this case runs against the live server below.
      await server.start();
      await eventually(
        () =>
          db
            .query('SELECT 1')
            .then(() => true)
            .catch(() => undefined),
        5_000,
      );
      await expect(db.query('SELEC 1')).rejects.toMatchObject({ code: '42601' });
      await expect(db.query('INSERT INTO items (id) VALUES (2)')).rejects.toMatchObject({ code: '23505' });
    });

    it('works again after the restart without reopening: nothing committed was lost, nothing half-done kept', async () => {
      await db.transaction((tx) => tx.query('INSERT INTO items (id) VALUES (5)'));
      const { rows } = await db.query<{ id: number }>('SELECT id FROM items ORDER BY id');
      expect(rows.map((row) => row.id)).toEqual([2, 5]);
      expect(uncaught).toEqual([]);
    });
  },
);

describe('db with Postgres unreachable at open', () => {
  it('fails at once with the server and the reason, without the password', async () => {
    const port = await freePort(); // nothing listens there
    const started = Date.now();
    const opening = openDb({
      service: 'nowhere',
      databaseUrl: `postgres://app:s3cret@127.0.0.1:${port}/app`,
    });
    await expect(opening).rejects.toThrow(
      new RegExp(`^Cannot open the nowhere database at 127\\.0\\.0\\.1:${port}/app: .*ECONNREFUSED`),
    );
    await expect(opening).rejects.not.toThrow(/s3cret/);
    expect(Date.now() - started).toBeLessThan(3_000);
  });
});

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventually, freshDb } from '@costgov/testing';
import type { Db } from '../src/db';
import { migrate } from '../src/migrate';

describe(`db (${process.env.DATABASE_URL ? 'postgres' : 'pglite'})`, () => {
  let db: Db;
  beforeAll(async () => {
    db = await freshDb('dbtest');
  });
  afterAll(() => db.close());

  it('applies migrations once, in order', async () => {
    const migrations = [
      {
        name: '0001_items',
        sql: 'CREATE TABLE items (id text PRIMARY KEY, amount numeric NOT NULL, n bigint)',
      },
      { name: '0002_index', sql: 'CREATE INDEX items_amount ON items (amount)' },
    ];
    expect(await migrate(db, migrations)).toEqual(['0001_items', '0002_index']);
    expect(await migrate(db, migrations)).toEqual([]);
  });

  it('returns numeric and bigint columns as numbers', async () => {
    await db.query('INSERT INTO items (id, amount, n) VALUES ($1, $2, $3)', ['a', '12.5', 7]);
    const { rows } = await db.query<{ amount: number; n: number }>(
      'SELECT amount, n FROM items WHERE id = $1',
      ['a'],
    );
    expect(rows[0]).toEqual({ amount: 12.5, n: 7 });
  });

  it('commits a transaction that resolves and rolls back one that throws', async () => {
    await db.transaction((tx) => tx.query(`INSERT INTO items (id, amount) VALUES ('b', 1)`));
    await expect(
      db.transaction(async (tx) => {
        await tx.query(`INSERT INTO items (id, amount) VALUES ('c', 1)`);
        throw new Error('boom');
      }),
    ).rejects.toThrow('boom');
    const { rows } = await db.query<{ id: string }>('SELECT id FROM items ORDER BY id');
    expect(rows.map((row) => row.id)).toEqual(['a', 'b']);
  });

  it('has pg_trgm for substring indexes', async () => {
    await db.query('CREATE EXTENSION IF NOT EXISTS pg_trgm');
    const { rows } = await db.query<{ s: number }>(`SELECT similarity('budget', 'budgets') > 0.5 AS s`);
    expect(rows[0]?.s).toBe(true);
  });

  it('runs a named (prepared) statement again and again, also after a migration adds a column', async () => {
    const read = () =>
      db.query<{ id: string; amount: number }>('SELECT id, amount FROM items WHERE id = $1', ['a'], {
        name: 'dbtest_item',
      });
    for (let i = 0; i < 12; i++) expect((await read()).rows).toEqual([{ id: 'a', amount: 12.5 }]);
    await db.exec('ALTER TABLE items ADD COLUMN note text');
    expect((await read()).rows).toEqual([{ id: 'a', amount: 12.5 }]);
    // A column the statement returns changes type: Postgres refuses the prepared plan on every
    // connection that has it ("cached plan must not change result type"); the query is sent unnamed.
    await db.exec('ALTER TABLE items ALTER COLUMN amount TYPE double precision');
    for (let i = 0; i < 12; i++) expect((await read()).rows).toEqual([{ id: 'a', amount: 12.5 }]);
  });

  it('delivers notifications in commit order, its own last when sent after a commit', async () => {
    const seen: string[] = [];
    const subscription = await db.subscribe!(['dbtest_changed', 'dbtest_sync'], (channel, payload) =>
      seen.push(`${channel}:${payload}`),
    );
    try {
      for (let i = 0; i < 5; i++) {
        await db.transaction((tx) => tx.query(`SELECT pg_notify('dbtest_changed', $1)`, [`c${i}`]));
        await subscription.notify('dbtest_sync', `s${i}`);
      }
      await eventually(() => expect(seen.length).toBe(10), 5_000);
      expect(seen).toEqual([0, 1, 2, 3, 4].flatMap((i) => [`dbtest_changed:c${i}`, `dbtest_sync:s${i}`]));
      await db
        .transaction(async (tx) => {
          await tx.query(`SELECT pg_notify('dbtest_changed', 'rolled back')`);
          throw new Error('rollback');
        })
        .catch(() => undefined);
      await subscription.notify('dbtest_sync', 'after rollback');
      await eventually(() => expect(seen.at(-1)).toBe('dbtest_sync:after rollback'), 5_000);
      expect(seen).not.toContain('dbtest_changed:rolled back');
    } finally {
      await subscription.close();
    }
  });

  it.runIf(Boolean(process.env.DATABASE_URL))(
    'tells a subscription that its connection was lost, and fails its notify',
    async () => {
      const lost: Error[] = [];
      const subscription = await db.subscribe!(
        ['dbtest_lost'],
        () => undefined,
        (error) => lost.push(error),
      );
      await subscription.notify('dbtest_lost', 'marker');
      await db.query(
        `SELECT pg_terminate_backend(pid) FROM pg_stat_activity
         WHERE datname = current_database() AND application_name = 'costgov ' || current_schema() || ' dbtest_lost'`,
      );
      await eventually(() => expect(lost.length).toBe(1), 5_000);
      await expect(subscription.notify('dbtest_lost', 'x')).rejects.toMatchObject({
        code: 'service_unavailable',
      });
      await subscription.close();
    },
  );
});

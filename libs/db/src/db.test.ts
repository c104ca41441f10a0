import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freshDb } from '@costgov/testing';
import type { Db } from './db';
import { migrate } from './migrate';

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
});

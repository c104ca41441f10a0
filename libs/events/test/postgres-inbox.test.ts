import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { uniqueName } from '@costgov/testing';
import { postgresInbox, type PgClient } from '../src/inbox';

const url = process.env.DATABASE_URL;

describe.skipIf(!url)('postgresInbox', () => {
  const schema = uniqueName('t_events');
  let pool: pg.Pool;
  let inbox: ReturnType<typeof postgresInbox>;
  const effects = async () =>
    (await pool.query<{ note: string }>(`SELECT note FROM ${schema}.effects ORDER BY note`)).rows.map(
      (r) => r.note,
    );
  const write = (note: string) => async (tx: PgClient) => {
    await tx.query(`INSERT INTO ${schema}.effects (note) VALUES ($1)`, [note]);
  };

  beforeAll(async () => {
    pool = new pg.Pool({ connectionString: url, max: 4 });
    await pool.query(`CREATE SCHEMA ${schema}`);
    await pool.query(`CREATE TABLE ${schema}.effects (note text NOT NULL)`);
    inbox = postgresInbox(pool, { table: `${schema}.event_inbox` });
    await inbox.migrate();
    await inbox.migrate(); // idempotent
  });

  afterAll(async () => {
    await pool?.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
    await pool?.end();
  });

  it('commits the effect with the inbox row, once per consumer and event', async () => {
    expect(await inbox.once('billing', 'evt_1', write('first'))).toBe(true);
    expect(await inbox.once('billing', 'evt_1', write('duplicate'))).toBe(false);
    expect(await inbox.once('audit', 'evt_1', write('other consumer'))).toBe(true);
    expect(await effects()).toEqual(['first', 'other consumer']);
  });

  it('rolls back both when the effect fails, so a redelivery applies it', async () => {
    await expect(
      inbox.once('billing', 'evt_2', async (tx) => {
        await write('half done')(tx);
        throw new Error('downstream refused');
      }),
    ).rejects.toThrow('downstream refused');
    expect(await effects()).not.toContain('half done');
    expect(await inbox.once('billing', 'evt_2', write('retried'))).toBe(true);
    expect(await effects()).toContain('retried');
  });

  it('lets one of two concurrent deliveries of an event apply it', async () => {
    const results = await Promise.all([
      inbox.once('billing', 'evt_3', write('race a')),
      inbox.once('billing', 'evt_3', write('race b')),
    ]);
    expect(results.sort()).toEqual([false, true]);
    expect((await effects()).filter((note) => note.startsWith('race'))).toHaveLength(1);
  });

  it('refuses a table name that is not an identifier', () => {
    expect(() => postgresInbox(pool, { table: 'inbox; DROP TABLE x' })).toThrow(/Invalid inbox table/);
  });
});

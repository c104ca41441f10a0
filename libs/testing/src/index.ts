import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { openDb, type Db } from '@costgov/db';

/** True when the run targets real infrastructure (CI's second pass, or a developer's environment). */
export const realInfra = Boolean(process.env.DATABASE_URL && process.env.NATS_URL);

export const uniqueName = (prefix: string): string => `${prefix}_${randomBytes(5).toString('hex')}`;

/**
 * A fresh, empty database for one test file: a new schema on the real Postgres when DATABASE_URL is
 * set (dropped on close), otherwise an in-memory PGlite.
 */
export async function freshDb(service: string): Promise<Db> {
  const url = process.env.DATABASE_URL;
  if (!url) return openDb({ service, dataDir: 'memory' });
  const schema = uniqueName(`t_${service}`);
  const db = await openDb({ service, databaseUrl: url, schema });
  return {
    ...db,
    async close() {
      await db.close();
      const client = new pg.Client({ connectionString: url });
      await client.connect();
      await client.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
      await client.end();
    },
  };
}

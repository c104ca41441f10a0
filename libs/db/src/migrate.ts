import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import type { Db } from './db';

export interface Migration {
  /** Sortable name, e.g. `0001_projects`. */
  name: string;
  sql: string;
}

/** Reads `NNNN_name.sql` files of a folder, in name order. */
export function migrationsFrom(folder: string): Migration[] {
  return readdirSync(folder)
    .filter((file) => file.endsWith('.sql'))
    .sort()
    .map((file) => ({
      name: file.replace(/\.sql$/, ''),
      sql: readFileSync(path.join(folder, file), 'utf8'),
    }));
}

/**
 * Applies the migrations not applied yet, in order, in one transaction. On Postgres an advisory lock
 * keyed by the schema serialises services starting at once. Hand-written because no migration library
 * runs the same files on both pg and PGlite.
 */
export async function migrate(db: Db, migrations: Migration[]): Promise<string[]> {
  return db.transaction(async (tx) => {
    if (db.kind === 'postgres') {
      await tx.query(`SELECT pg_advisory_xact_lock(hashtext(current_schema() || '.migrations'))`);
    }
    await tx.query(`CREATE TABLE IF NOT EXISTS schema_migrations (
      name text PRIMARY KEY,
      applied_at timestamptz NOT NULL DEFAULT now()
    )`);
    const { rows } = await tx.query<{ name: string }>('SELECT name FROM schema_migrations');
    const applied = new Set(rows.map((row) => row.name));
    const pending = migrations.filter((migration) => !applied.has(migration.name));
    for (const migration of pending) {
      await tx.exec(migration.sql);
      await tx.query('INSERT INTO schema_migrations (name) VALUES ($1)', [migration.name]);
    }
    return pending.map((migration) => migration.name);
  });
}

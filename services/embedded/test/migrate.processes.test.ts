import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { repoRoot, uniqueName } from '@costgov/testing';

/** A fresh, empty database on the real Postgres when DATABASE_URL is set, else a fresh PGlite folder. */
let target: NodeJS.ProcessEnv;
let cleanup: () => Promise<void>;

beforeAll(async () => {
  const url = process.env.DATABASE_URL;
  if (!url) {
    const dataDir = mkdtempSync(path.join(tmpdir(), 'costgov-migrate-'));
    target = { DATA_DIR: dataDir };
    cleanup = async () => rmSync(dataDir, { recursive: true, force: true });
    return;
  }
  const name = uniqueName('migrate');
  const admin = new pg.Client({ connectionString: url });
  await admin.connect();
  await admin.query(`CREATE DATABASE ${name}`);
  await admin.end();
  const database = new URL(url);
  database.pathname = `/${name}`;
  target = { DATABASE_URL: database.toString() };
  cleanup = async () => {
    const client = new pg.Client({ connectionString: url });
    await client.connect();
    await client.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
    await client.end();
  };
});

afterAll(() => cleanup?.());

function runMigrate(): Promise<{
  code: number | null;
  lines: Array<{ schema?: string; migrations?: string[]; msg: string }>;
}> {
  const env: NodeJS.ProcessEnv = { ...process.env, LOG_LEVEL: 'info', ...target };
  if (!target.DATABASE_URL) delete env.DATABASE_URL;
  const child = spawn(process.execPath, ['--import', 'tsx', 'services/embedded/src/migrate.ts'], {
    cwd: repoRoot,
    env,
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  let stdout = '';
  child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  return new Promise((resolve) =>
    child.once('exit', (code) =>
      resolve({
        code,
        lines: stdout
          .split('\n')
          .filter(Boolean)
          .map((line) => JSON.parse(line) as never),
      }),
    ),
  );
}

describe('the migrate entry point', () => {
  it(
    'applies every service schema once and exits 0; a second run finds them up to date',
    { timeout: 300_000 },
    async () => {
      const first = await runMigrate();
      expect(first.code).toBe(0);
      const applied = Object.fromEntries(
        first.lines.filter((l) => l.schema).map((l) => [l.schema!, l.migrations ?? []] as const),
      );
      expect(Object.keys(applied).sort()).toEqual([
        'budgets',
        'costs',
        'identity',
        'notifier',
        'scanner',
        'violations',
      ]);
      for (const migrations of Object.values(applied)) expect(migrations.length).toBeGreaterThan(1);

      const second = await runMigrate();
      expect(second.code).toBe(0);
      expect(second.lines.filter((l) => l.schema).map((l) => [l.schema, l.msg])).toEqual([
        ['identity', 'up to date'],
        ['costs', 'up to date'],
        ['budgets', 'up to date'],
        ['violations', 'up to date'],
        ['scanner', 'up to date'],
        ['notifier', 'up to date'],
      ]);
    },
  );
});

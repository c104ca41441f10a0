import { randomBytes } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import { jetstreamManager } from '@nats-io/jetstream';
import { connect } from '@nats-io/transport-node';
import pg from 'pg';
import { createMemoryBus, createNatsBus, type Bus } from '@costgov/bus';
import { openDb, type Db } from '@costgov/db';
import type { Logger } from '@costgov/log';
import { pgliteTemplateVariable } from './pglite-template';

let template: Promise<Blob | undefined> | undefined;

/**
 * The image every in-memory test database starts from: an empty cluster made once per test run by the
 * vitest global setup (pglite-template.ts), read once per worker. None outside vitest: a bare start.
 */
function pgliteTemplate(): Promise<Blob | undefined> {
  const file = process.env[pgliteTemplateVariable];
  template ??= file ? readFile(file).then((image) => new Blob([image])) : Promise.resolve(undefined);
  return template;
}

/** True when the run targets real infrastructure (CI's second pass, or a developer's environment). */
export const realInfra = Boolean(process.env.DATABASE_URL && process.env.NATS_URL);

export const uniqueName = (prefix: string): string => `${prefix}_${randomBytes(5).toString('hex')}`;

/**
 * A fresh, empty database for one test file: a new schema on the real Postgres when DATABASE_URL is
 * set (dropped on close), otherwise an in-memory PGlite.
 */
export async function freshDb(service: string): Promise<Db> {
  const url = process.env.DATABASE_URL;
  if (!url) return openDb({ service, dataDir: 'memory', template: await pgliteTemplate() });
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

export type TestBus = Bus & { namespace: string };

/** A bus for one test file: NATS with a namespace of its own when NATS_URL is set, else the in-process bus. */
export async function testBus(logger: Logger): Promise<TestBus> {
  const namespace = uniqueName('t');
  const url = process.env.NATS_URL;
  const bus = url ? await createNatsBus({ url, namespace, logger }) : createMemoryBus({ logger });
  const close = bus.close.bind(bus);
  return Object.assign(bus, {
    namespace,
    async close() {
      await close();
      if (url) await deleteStreams(url, namespace);
    },
  });
}

/** A TCP port that was free a moment ago on loopback. */
export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => resolve(typeof address === 'object' && address ? address.port : 0));
    });
  });
}

/** Deletes the streams of a test namespace, so real-infrastructure runs leave nothing behind. */
export async function deleteStreams(url: string, namespace: string): Promise<void> {
  const nc = await connect({ servers: url });
  try {
    const jsm = await jetstreamManager(nc);
    for await (const name of jsm.streams.names()) {
      if (name.startsWith(`${namespace.toUpperCase()}_`)) await jsm.streams.delete(name);
    }
  } finally {
    await nc.close();
  }
}

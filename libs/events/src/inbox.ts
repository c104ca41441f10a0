import type { EventType, PayloadOf } from './catalogue';
import type { EventHandler, ReceivedEvent } from './subscriber';

/**
 * Records which events a consumer has handled. `once` runs the effect only if (consumer, event id) is
 * new, and records it atomically with the effect: an effect that fails leaves no record (the event is
 * retried), a redelivered event changes nothing. `Tx` is what the effect writes with (a transaction).
 */
export interface InboxStore<Tx> {
  /** Resolves true when the effect ran now, false when the event had been handled before. */
  once(consumer: string, eventId: string, effect: (tx: Tx) => Promise<void>): Promise<boolean>;
}

/** A handler that applies its effect at most once per event, inside the inbox's transaction. */
export function withInbox<T extends EventType, Tx>(
  store: InboxStore<Tx>,
  handler: (data: PayloadOf<T>, event: ReceivedEvent<T>, tx: Tx) => Promise<void>,
): EventHandler<T> {
  return async (data, event) => {
    await store.once(event.durable, event.attributes.id, (tx) => handler(data, event, tx));
  };
}

/**
 * An inbox in this process's memory, for examples and tests: it forgets on restart, and a concurrent
 * delivery of the same event waits for the first.
 */
export function memoryInbox(): InboxStore<void> {
  const done = new Set<string>();
  const inFlight = new Map<string, Promise<boolean>>();
  return {
    async once(consumer, eventId, effect) {
      const key = JSON.stringify([consumer, eventId]);
      for (let pending = inFlight.get(key); pending; pending = inFlight.get(key))
        await pending.catch(() => false);
      if (done.has(key)) return false;
      const run = effect().then(() => {
        done.add(key);
        return true;
      });
      inFlight.set(key, run);
      try {
        return await run;
      } finally {
        inFlight.delete(key);
      }
    },
  };
}

/** What the Postgres inbox needs of a `pg` client: a `pg.PoolClient` fits. */
export interface PgClient {
  query(text: string, values?: unknown[]): Promise<{ rowCount: number | null }>;
  release(error?: Error | boolean): void;
}

/** What the Postgres inbox needs of a `pg` pool: a `pg.Pool` fits. */
export interface PgPool {
  connect(): Promise<PgClient>;
}

const tablePattern = /^[a-z_][a-z0-9_]*(\.[a-z_][a-z0-9_]*)?$/;

/**
 * An inbox table in Postgres (`pg`): the effect runs on the same client inside the transaction that
 * inserts (consumer, event id), so both commit or neither. A concurrent delivery of the same event
 * waits on the primary key until the first commits, then skips.
 */
export function postgresInbox(pool: PgPool, { table = 'event_inbox' }: { table?: string } = {}) {
  if (!tablePattern.test(table)) throw new Error(`Invalid inbox table name '${table}'.`);
  const store: InboxStore<PgClient> & { migrate(): Promise<void> } = {
    /** Creates the table if it does not exist. */
    async migrate() {
      const client = await pool.connect();
      try {
        await client.query(
          `CREATE TABLE IF NOT EXISTS ${table} (
             consumer text NOT NULL,
             event_id text NOT NULL,
             handled_at timestamptz NOT NULL DEFAULT now(),
             PRIMARY KEY (consumer, event_id)
           )`,
        );
      } finally {
        client.release();
      }
    },
    async once(consumer, eventId, effect) {
      const client = await pool.connect();
      let broken: Error | undefined;
      try {
        await client.query('BEGIN');
        const { rowCount } = await client.query(
          `INSERT INTO ${table} (consumer, event_id) VALUES ($1, $2) ON CONFLICT DO NOTHING`,
          [consumer, eventId],
        );
        if (rowCount === 0) {
          await client.query('ROLLBACK');
          return false;
        }
        await effect(client);
        await client.query('COMMIT');
        return true;
      } catch (error) {
        await client.query('ROLLBACK').catch((rollbackError: Error) => (broken = rollbackError));
        throw error;
      } finally {
        client.release(broken); // a client that cannot roll back is not returned to the pool
      }
    },
  };
  return store;
}

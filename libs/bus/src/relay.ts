import { context } from '@opentelemetry/api';
import { suppressTracing } from '@opentelemetry/core';
import type { Db, Listening, Queryable } from '@costgov/db';
import type { Logger } from '@costgov/log';
import type { Bus } from './bus';
import type { CloudEvent } from './cloudevent';
import type { OutboxHeaders } from './outbox';

export interface OutboxRelayOptions {
  db: Db;
  bus: Bus;
  logger: Logger;
  /**
   * Pause between two looks at the outbox when no commit woke the relay: the bound on publishing delay
   * while notifications are lost (a dropped listening connection, a Db without listen). Default 1000 ms.
   */
  pollMs?: number;
  /** Rows published per database round trip. Default 100. */
  batchSize?: number;
  /** Published rows are deleted after this long. Default 7 days. */
  retainPublishedMs?: number;
  /** Longest pause between two attempts while the database fails (backoff from pollMs). Default 5 s. */
  maxRetryMs?: number;
}

export interface OutboxRelay {
  /** Publishes everything pending now; resolves with how many events were published. Never rejects. */
  flush(): Promise<number>;
  /** Stops polling and listening, and waits for the round in progress. */
  stop(): Promise<void>;
}

interface OutboxRow {
  id: string;
  type: string;
  subject: string | null;
  data: unknown;
  headers: OutboxHeaders;
}

interface BatchResult {
  published: number;
  more: boolean;
}

const pruneEveryMs = 60 * 60_000;

/**
 * Publishes outbox rows in the order they were written and marks them published. It wakes when a
 * transaction that added an event commits (the outbox's NOTIFY, see outbox.ts), and polls besides in case
 * a notification was missed. A failed publish is retried on the next round; an event published twice (a
 * crash before the mark) is dropped by the bus's dedupe on the event id. No failure stops it: a database
 * outage is logged once and retried with backoff.
 */
export function startOutboxRelay({
  db,
  bus,
  logger,
  pollMs = 1_000,
  batchSize = 100,
  retainPublishedMs = 7 * 24 * 60 * 60_000,
  maxRetryMs = 5_000,
}: OutboxRelayOptions): OutboxRelay {
  const log = logger.child({ component: 'outbox-relay' });
  let publishFailing = false; // log an outage once, not every round
  let readFailures = 0;
  let lastPrune = 0;
  let stopped = false;
  let tail: Promise<number> = Promise.resolve(0);

  async function publishBatch(q: Queryable, lock: string): Promise<BatchResult> {
    const { rows } = await q.query<OutboxRow>(
      `SELECT id, type, subject, data, headers FROM outbox WHERE published_at IS NULL ORDER BY created_at, id LIMIT $1 ${lock}`,
      [batchSize],
    );
    const published: string[] = [];
    let failure: { error: unknown; row: OutboxRow } | undefined;
    for (const row of rows) {
      try {
        await bus.publish(eventOf(row));
        published.push(row.id);
      } catch (error) {
        failure = { error, row };
        break; // later events must not overtake this one
      }
    }
    if (published.length > 0) {
      await q.query('UPDATE outbox SET published_at = now() WHERE id = ANY($1::text[])', [published]);
    }
    if (failure && !publishFailing) {
      log.error(
        { err: failure.error, event_id: failure.row.id, event_type: failure.row.type },
        'publishing outbox events failed; retrying',
      );
    } else if (!failure && publishFailing && rows.length > 0) {
      log.info('publishing outbox events works again');
    }
    publishFailing = failure !== undefined;
    return { published: published.length, more: rows.length === batchSize && !failure };
  }

  // SKIP LOCKED lets replicas on one Postgres share the outbox without publishing a row twice. PGlite
  // has a single connection, and a transaction there would block the whole service while publishing.
  const batch = (): Promise<BatchResult> =>
    db.kind === 'postgres'
      ? db.transaction((tx) => publishBatch(tx, 'FOR UPDATE SKIP LOCKED'))
      : publishBatch(db, '');

  async function drain(): Promise<number> {
    let total = 0;
    try {
      for (let result = await batch(); ; result = await batch()) {
        total += result.published;
        if (!result.more) break;
      }
      if (Date.now() - lastPrune > pruneEveryMs) {
        lastPrune = Date.now();
        await db.query('DELETE FROM outbox WHERE published_at < $1', [
          new Date(Date.now() - retainPublishedMs),
        ]);
      }
      if (readFailures > 0) log.info('reading the outbox works again');
      readFailures = 0;
    } catch (error) {
      if (readFailures === 0) log.error({ err: error }, 'reading the outbox failed; retrying with backoff');
      readFailures++;
    }
    return total;
  }

  function flush(): Promise<number> {
    // One round at a time, also when flush() is called during a poll. Tracing is suppressed so that
    // polling the outbox does not start a trace every few hundred milliseconds; publish spans still
    // continue the trace each event carries.
    const run = tail.then(
      () => context.with(suppressTracing(context.active()), drain),
      () => 0,
    );
    tail = run.catch(() => 0);
    return tail;
  }

  // The loop: a round, then sleep until the poll (or backoff) is due or a commit wakes it.
  let wakeUp: (() => void) | undefined;
  let woken = false; // a wake-up that came during a round starts the next one at once
  const wake = () => {
    woken = true;
    wakeUp?.();
  };
  const nextDelay = () =>
    readFailures === 0 ? pollMs : Math.min(pollMs * 2 ** (readFailures - 1), Math.max(maxRetryMs, pollMs));
  const sleep = (ms: number) =>
    new Promise<void>((resolve) => {
      const timer = setTimeout(done, ms).unref(); // the relay alone keeps no process alive
      function done() {
        clearTimeout(timer);
        wakeUp = undefined;
        resolve();
      }
      wakeUp = done;
    });
  const loop = (async () => {
    await new Promise((resolve) => setImmediate(resolve)); // a flush() called right after start goes first
    while (!stopped) {
      try {
        woken = false;
        await flush();
        if (!stopped && !woken) await sleep(nextDelay());
      } catch (error) {
        log.error({ err: error }, 'outbox relay round failed'); // flush() never rejects; this is a bug
        await sleep(pollMs);
      }
    }
  })();

  const listener = listenForCommits(db, wake, log, () => stopped, maxRetryMs);

  return {
    flush,
    async stop() {
      stopped = true;
      wakeUp?.();
      await loop;
      await listener.close();
      await tail;
    },
  };
}

/** The channel the outbox notifies on commit: one per schema, so a service wakes only its own relay. */
export const outboxChannelSql = `left('outbox_' || current_schema(), 63)`;

/**
 * Keeps a LISTEN on the outbox channel where the Db can listen, calling `wake` on each commit. A lost
 * listening connection is logged once and listened again with backoff; the relay polls meanwhile.
 */
function listenForCommits(
  db: Db,
  wake: () => void,
  log: Logger,
  stopped: () => boolean,
  maxRetryMs: number,
): { close(): Promise<void> } {
  if (!db.listen) return { close: async () => undefined };
  let listening: Listening | undefined;
  let failures = 0;
  let retry: NodeJS.Timeout | undefined;
  let attempt: Promise<void> = Promise.resolve();

  const lost = (error: unknown) => {
    listening = undefined;
    if (stopped()) return;
    if (failures === 0)
      log.warn({ err: error }, 'not listening for outbox commits; polling until it is back');
    failures++;
    retry = setTimeout(start, Math.min(100 * 2 ** (failures - 1), maxRetryMs));
    retry.unref();
  };
  function start(): void {
    attempt = (async () => {
      try {
        const { rows } = await db.query<{ channel: string }>(`SELECT ${outboxChannelSql} AS channel`);
        const channel = rows[0]!.channel;
        const subscription = await db.listen!(channel, wake, lost);
        if (stopped()) return void (await subscription.close());
        listening = subscription;
        if (failures > 0) log.info('listening for outbox commits again');
        else log.debug({ channel }, 'listening for outbox commits');
        failures = 0;
        wake(); // catch up on what committed while nobody listened
      } catch (error) {
        lost(error);
      }
    })().catch(() => undefined); // only a logger that throws gets here
  }
  start();
  return {
    async close() {
      clearTimeout(retry);
      await attempt;
      await listening?.close().catch(() => undefined);
      listening = undefined;
    },
  };
}

function eventOf(row: OutboxRow): CloudEvent {
  const event: CloudEvent = {
    specversion: '1.0',
    id: row.id,
    source: row.headers.source,
    type: row.type,
    time: row.headers.time,
    datacontenttype: 'application/json',
    data: row.data,
  };
  if (row.subject !== null) event.subject = row.subject;
  if (row.headers.traceparent) event.traceparent = row.headers.traceparent;
  if (row.headers.tracestate) event.tracestate = row.headers.tracestate;
  return event;
}

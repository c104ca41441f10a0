import { context } from '@opentelemetry/api';
import { suppressTracing } from '@opentelemetry/core';
import type { Db, Queryable } from '@costgov/db';
import type { Logger } from '@costgov/log';
import type { Bus } from './bus';
import type { CloudEvent } from './cloudevent';
import type { OutboxHeaders } from './outbox';

export interface OutboxRelayOptions {
  db: Db;
  bus: Bus;
  logger: Logger;
  /** Pause between two looks at the outbox. Default 200 ms. */
  pollMs?: number;
  /** Rows published per database round trip. Default 100. */
  batchSize?: number;
  /** Published rows are deleted after this long. Default 7 days. */
  retainPublishedMs?: number;
}

export interface OutboxRelay {
  /** Publishes everything pending now; resolves with how many events were published. Never rejects. */
  flush(): Promise<number>;
  /** Stops polling and waits for the round in progress. */
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
 * Publishes outbox rows in the order they were written and marks them published. A failed publish is
 * retried on the next poll; an event published twice (a crash before the mark) is dropped by the
 * bus's dedupe on the event id.
 */
export function startOutboxRelay({
  db,
  bus,
  logger,
  pollMs = 200,
  batchSize = 100,
  retainPublishedMs = 7 * 24 * 60 * 60_000,
}: OutboxRelayOptions): OutboxRelay {
  const log = logger.child({ component: 'outbox-relay' });
  let failing = false; // log an outage once, not every poll
  let lastPrune = 0;
  let stopped = false;
  let timer: NodeJS.Timeout | undefined;
  let tail: Promise<unknown> = Promise.resolve();

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
    if (failure && !failing) {
      log.error(
        { err: failure.error, event_id: failure.row.id, event_type: failure.row.type },
        'publishing outbox events failed; retrying',
      );
    } else if (!failure && failing && rows.length > 0) {
      log.info('publishing outbox events works again');
    }
    failing = failure !== undefined;
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
    } catch (error) {
      log.error({ err: error }, 'reading the outbox failed; retrying');
    }
    return total;
  }

  function flush(): Promise<number> {
    // One round at a time, also when flush() is called during a poll. Tracing is suppressed so that
    // polling the outbox does not start a trace every few hundred milliseconds; publish spans still
    // continue the trace each event carries.
    const run = tail.then(() => context.with(suppressTracing(context.active()), drain));
    tail = run;
    return run;
  }

  async function poll(): Promise<void> {
    await flush();
    if (!stopped) timer = setTimeout(poll, pollMs).unref();
  }
  timer = setTimeout(poll, 0).unref();

  return {
    flush,
    async stop() {
      stopped = true;
      clearTimeout(timer);
      await tail;
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

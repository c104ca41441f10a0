import type { DescMessage, MessageShape } from '@bufbuild/protobuf';
import type { Queryable } from '@costgov/db';
import { newId as defaultNewId, type IdGenerator } from '@costgov/ids';
import { assertEventType, serviceOf, type CloudEvent } from './cloudevent';
import { encodePayload } from './protobuf';
import { outboxChannelSql } from './relay';
import { currentTraceHeaders } from './tracing';

export interface OutboxOptions {
  /** The producing service, e.g. `budgets`; every event type it adds starts with it. */
  source: string;
  newId?: IdGenerator;
  now?: () => Date;
}

export interface OutboxEntry {
  type: string;
  subject?: string;
  data: unknown;
}

export interface OutboxMessageEntry<Desc extends DescMessage> {
  type: string;
  subject?: string;
  schema: Desc;
  message: MessageShape<Desc>;
}

/** Envelope fields kept beside the payload until the relay publishes the row. */
export type OutboxHeaders = Pick<CloudEvent, 'source' | 'time' | 'traceparent' | 'tracestate'>;

/** Most events one INSERT of `addAll` writes (a batch of more takes several statements). */
const batchSize = 2000;

/**
 * Writes events in the caller's transaction, so an event exists if and only if its change committed.
 * The relay (relay.ts) publishes them as soon as that transaction commits.
 */
export function createOutbox({ source, newId = defaultNewId, now = () => new Date() }: OutboxOptions) {
  /** The event as the relay will publish it, and the envelope fields the row keeps beside its payload. */
  function eventOf(entry: OutboxEntry): { event: CloudEvent; headers: OutboxHeaders } {
    assertEventType(entry.type);
    if (serviceOf(entry.type) !== source) {
      throw new Error(
        `Event type '${entry.type}' must start with its producing service '${source}.' (it names the stream).`,
      );
    }
    const event: CloudEvent = {
      specversion: '1.0',
      id: newId('event'),
      source,
      type: entry.type,
      time: now().toISOString(),
      datacontenttype: 'application/json',
      data: entry.data ?? null,
      ...currentTraceHeaders(),
    };
    if (entry.subject !== undefined) event.subject = entry.subject;
    const headers: OutboxHeaders = {
      source,
      time: event.time,
      traceparent: event.traceparent,
      tracestate: event.tracestate,
    };
    return { event, headers };
  }

  /**
   * Adds events in order, a few thousand per INSERT with one NOTIFY, instead of a statement each: for a
   * transaction that writes thousands (a scan's findings). Rows keep the order given, as the relay reads
   * them: `created_at` (clock_timestamp(), taken row by row), then the id (time-ordered). The NOTIFY is
   * delivered when (and only if) the transaction commits: it wakes the relay at once.
   */
  async function addAll(tx: Queryable, entries: readonly OutboxEntry[]): Promise<CloudEvent[]> {
    const added: CloudEvent[] = [];
    for (let start = 0; start < entries.length; start += batchSize) {
      const batch = entries.slice(start, start + batchSize).map(eventOf);
      const rows = batch.map(({ event, headers }) => ({
        id: event.id,
        type: event.type,
        subject: event.subject ?? null,
        data: event.data,
        headers,
      }));
      await tx.query(
        `WITH added AS (
           INSERT INTO outbox (id, type, subject, data, headers)
           SELECT row->>'id', row->>'type', row->>'subject', row->'data', row->'headers'
           FROM jsonb_array_elements($1::jsonb) WITH ORDINALITY AS given (row, n) ORDER BY n
           RETURNING id
         )
         SELECT pg_notify(${outboxChannelSql}, '') FROM (SELECT 1 FROM added LIMIT 1) AS one`,
        [JSON.stringify(rows)],
      );
      added.push(...batch.map(({ event }) => event));
    }
    return added;
  }

  /** One event: a batch of one. */
  async function add(tx: Queryable, entry: OutboxEntry): Promise<CloudEvent> {
    const [event] = await addAll(tx, [entry]);
    return event!;
  }

  return {
    add,
    addAll,
    /** Adds events whose payloads are proto messages, as addAll does. */
    addMessages<Desc extends DescMessage>(
      tx: Queryable,
      entries: ReadonlyArray<OutboxMessageEntry<Desc>>,
    ): Promise<CloudEvent[]> {
      return addAll(
        tx,
        entries.map((entry) => ({
          type: entry.type,
          subject: entry.subject,
          data: encodePayload(entry.schema, entry.message),
        })),
      );
    },
    /** Adds an event whose payload is a proto message (see protobuf.ts). */
    addMessage<Desc extends DescMessage>(
      tx: Queryable,
      entry: OutboxMessageEntry<Desc>,
    ): Promise<CloudEvent> {
      return add(tx, {
        type: entry.type,
        subject: entry.subject,
        data: encodePayload(entry.schema, entry.message),
      });
    },
  };
}

export type Outbox = ReturnType<typeof createOutbox>;

/**
 * How many events wait in the outbox and the age of the oldest, for the outbox gauges: one count over
 * the partial index of unpublished rows (published rows are not read).
 */
export async function outboxBacklog(db: Queryable): Promise<{ pending: number; oldestAgeSeconds: number }> {
  const { rows } = await db.query<{ pending: number; age: number | null }>(
    `SELECT count(*)::int AS pending, EXTRACT(EPOCH FROM clock_timestamp() - min(created_at))::float8 AS age
     FROM outbox WHERE published_at IS NULL`,
  );
  const row = rows[0];
  return { pending: Number(row?.pending ?? 0), oldestAgeSeconds: Math.max(0, Number(row?.age ?? 0)) };
}

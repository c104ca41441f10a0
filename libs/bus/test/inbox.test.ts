import { SpanKind, trace } from '@opentelemetry/api';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { migrate, type Db, type Queryable } from '@costgov/db';
import type { Logger } from '@costgov/log';
import { freshDb, captureLogger, eventually, type LogLine } from '@costgov/testing';
import type { Consumer } from '../src/bus';
import type { CloudEvent } from '../src/cloudevent';
import { consumeWithInbox } from '../src/inbox';
import { outboxMigration } from '../src/migration';
import { busImplementations, recordSpans, testEvent, type BusUnderTest } from './support';

const spans = recordSpans();
let db: Db;

beforeAll(async () => {
  db = await freshDb('bus_inbox');
  await migrate(db, [
    outboxMigration,
    { name: '0001_effects', sql: 'CREATE TABLE effects (event_id text NOT NULL, trace_id text)' },
  ]);
});
afterAll(() => db.close());
beforeEach(async () => {
  await db.query('DELETE FROM inbox');
  await db.query('DELETE FROM effects');
});

/** The effect a handler has: one row per application of an event. */
async function applyEffect(tx: Queryable, event: CloudEvent): Promise<void> {
  const traceId = trace.getActiveSpan()?.spanContext().traceId ?? null;
  await tx.query('INSERT INTO effects (event_id, trace_id) VALUES ($1, $2)', [event.id, traceId]);
}

const effects = async () =>
  (await db.query<{ event_id: string; trace_id: string | null }>('SELECT event_id, trace_id FROM effects'))
    .rows;

describe.each(busImplementations)('inbox on the $name bus', (implementation) => {
  let testBus: BusUnderTest;
  let logger: Logger;
  let logLines: LogLine[];
  let consumer: Consumer | undefined;

  beforeEach(async () => {
    ({ logger, lines: logLines } = captureLogger());
    testBus = await implementation.open(logger);
  });
  afterEach(async () => {
    await consumer?.stop();
    await testBus.close();
  });

  const start = (handler: (tx: Queryable, event: CloudEvent) => Promise<void>) =>
    consumeWithInbox({
      db,
      bus: testBus.bus,
      logger,
      durable: 'violations-projects',
      types: ['budgets.project.deleted'],
      backoffMs: 10,
      handler,
    }).then((started) => (consumer = started));

  it('applies an event that arrives twice exactly once', async () => {
    let calls = 0;
    await start(async (tx, event) => {
      calls++;
      await applyEffect(tx, event);
    });
    const event = testEvent();
    await testBus.bus.publish(event);
    // The same ce-id under another Nats-Msg-Id passes the bus's dedupe, so it really is delivered again.
    await testBus.bus.publish(event, { dedupeId: `${event.id}-again` });

    await eventually(() =>
      expect(logLines.some((line) => line.msg === 'duplicate' && line.event_id === event.id)).toBe(true),
    );
    expect(calls).toBe(1);
    expect((await effects()).map((row) => row.event_id)).toEqual([event.id]);
    const { rows } = await db.query('SELECT consumer, event_id FROM inbox');
    expect(rows).toEqual([{ consumer: 'violations-projects', event_id: event.id }]);
  });

  it('rolls back a failed handler, inbox row included, and applies the redelivery', async () => {
    const deliveries: number[] = [];
    await start(async (tx, event) => {
      await applyEffect(tx, event);
      deliveries.push(deliveries.length + 1);
      if (deliveries.length === 1) throw new Error('downstream unavailable');
    });
    const event = testEvent();
    await testBus.bus.publish(event);

    await eventually(() => expect(deliveries).toEqual([1, 2]));
    await eventually(async () => expect((await effects()).map((row) => row.event_id)).toEqual([event.id]));
    const { rows } = await db.query('SELECT event_id FROM inbox');
    expect(rows).toEqual([{ event_id: event.id }]);
  });

  it('rides out a database that fails mid-stream: the event is redelivered and applied once', async () => {
    let failNext = 1;
    const flaky: Db = {
      ...db,
      transaction: (fn) =>
        failNext-- > 0 ? Promise.reject(new Error('Connection terminated unexpectedly')) : db.transaction(fn),
    };
    consumer = await consumeWithInbox({
      db: flaky,
      bus: testBus.bus,
      logger,
      durable: 'violations-projects',
      types: ['budgets.project.deleted'],
      backoffMs: 10,
      handler: applyEffect,
    });
    const [first, second] = [testEvent(), testEvent()];
    await testBus.bus.publish(first);
    await testBus.bus.publish(second);

    await eventually(async () =>
      expect((await effects()).map((row) => row.event_id).sort()).toEqual([first.id, second.id].sort()),
    );
    expect(logLines.some((line) => line.msg === 'dependency unavailable; redelivering')).toBe(true);
  });

  it('runs the handler in a consumer span that continues the producer trace', async () => {
    await start(applyEffect);
    const traceId = await trace.getTracer('test').startActiveSpan('request', async (span) => {
      await testBus.bus.publish(testEvent());
      span.end();
      return span.spanContext().traceId;
    });

    await eventually(async () =>
      expect(await effects()).toEqual([{ event_id: expect.any(String), trace_id: traceId }]),
    );
    const consume = spans
      .getFinishedSpans()
      .find((s) => s.spanContext().traceId === traceId && s.kind === SpanKind.CONSUMER);
    expect(consume?.name).toBe('consume budgets.project.deleted');
  });
});

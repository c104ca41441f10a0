import { create } from '@bufbuild/protobuf';
import { trace } from '@opentelemetry/api';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { events } from '@costgov/contracts';
import { migrate, type Db } from '@costgov/db';
import { freshDb, captureLogger, eventually } from '@costgov/testing';
import type { Bus, Consumer } from '../src/bus';
import type { CloudEvent } from '../src/cloudevent';
import { createMemoryBus } from '../src/memory';
import { outboxMigration } from '../src/migration';
import { createOutbox } from '../src/outbox';
import { decodeEvent } from '../src/protobuf';
import { startOutboxRelay, type OutboxRelay } from '../src/relay';
import { busImplementations, recordSpans, type BusUnderTest } from './support';

recordSpans();
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const outbox = createOutbox({ source: 'budgets' });
let db: Db;

beforeAll(async () => {
  db = await freshDb('bus_outbox');
  await migrate(db, [outboxMigration]);
});
afterAll(() => db.close());
beforeEach(() => db.query('DELETE FROM outbox'));

const unpublished = async () =>
  (
    await db.query<{ id: string }>('SELECT id FROM outbox WHERE published_at IS NULL ORDER BY created_at')
  ).rows.map((row) => row.id);

describe.each(busImplementations)('outbox relay on the $name bus', (implementation) => {
  let testBus: BusUnderTest;
  let relay: OutboxRelay;
  let consumer: Consumer;
  let received: CloudEvent[];

  beforeEach(async () => {
    const { logger } = captureLogger();
    testBus = await implementation.open(logger);
    received = [];
    consumer = await testBus.bus.consume({
      durable: 'relayed',
      types: ['budgets.>'],
      handler: async (event) => void received.push(event),
    });
    relay = startOutboxRelay({ db, bus: testBus.bus, logger, pollMs: 20 });
  });
  afterEach(async () => {
    await relay.stop();
    await consumer.stop();
    await testBus.close();
  });

  it('publishes committed events in the order they were written, and never rolled-back ones', async () => {
    const committed = await db.transaction(async (tx) => [
      await outbox.add(tx, {
        type: 'budgets.project.created',
        subject: 'prj_1',
        data: { projectId: 'prj_1' },
      }),
      await outbox.add(tx, {
        type: 'budgets.project.updated',
        subject: 'prj_1',
        data: { projectId: 'prj_1', name: 'b' },
      }),
    ]);
    await expect(
      db.transaction(async (tx) => {
        await outbox.add(tx, { type: 'budgets.project.deleted', data: { projectId: 'prj_1' } });
        throw new Error('change refused');
      }),
    ).rejects.toThrow('change refused');

    await eventually(() => expect(received.map((e) => e.id)).toEqual(committed.map((e) => e.id)));
    expect(received.map(({ traceparent: _, ...event }) => event)).toEqual(committed);
    await eventually(async () => expect(await unpublished()).toEqual([])); // marked just after publishing
    const { rows } = await db.query('SELECT count(*)::int AS n FROM outbox');
    expect(rows[0]).toEqual({ n: 2 });
  });

  it('publishes a batch written at once in its order, between the events written before and after it', async () => {
    // More than one INSERT's worth (2,000 a statement), with single events around it.
    const committed = await db.transaction(async (tx) => {
      const before = await outbox.add(tx, {
        type: 'budgets.project.created',
        subject: 'prj_2',
        data: { i: -1 },
      });
      const batch = await outbox.addAll(
        tx,
        Array.from({ length: 4500 }, (_, i) => ({
          type: i % 2 ? 'budgets.project.updated' : 'budgets.budget.breached',
          subject: i % 3 ? `prj_${i}` : undefined,
          data: { i },
        })),
      );
      const after = await outbox.add(tx, { type: 'budgets.project.deleted', data: { i: 4500 } });
      return [before, ...batch, after];
    });
    expect(committed).toHaveLength(4502);
    await eventually(() => expect(received).toHaveLength(4502), 30_000);
    expect(received.map(({ traceparent: _, ...event }) => event)).toEqual(committed);
    expect(received.map((event) => (event.data as { i: number }).i)).toEqual(
      Array.from({ length: 4502 }, (_, i) => i - 1),
    );
    // Each event as `add` writes it: no subject when none was given.
    expect(received[1]!.subject).toBeUndefined();
    expect(received[2]!.subject).toBe('prj_1');
    await expect(
      db.transaction(async (tx) => {
        await outbox.addAll(tx, [{ type: 'budgets.project.deleted', data: {} }]);
        throw new Error('change refused');
      }),
    ).rejects.toThrow('change refused');
    const { rows } = await db.query('SELECT count(*)::int AS n FROM outbox');
    expect(rows[0]).toEqual({ n: 4502 });
    // A wrong type is refused before anything is written.
    await expect(
      db.transaction((tx) => outbox.addAll(tx, [{ type: 'scanner.scan.completed', data: {} }])),
    ).rejects.toThrow(/producing service/);
  }, 60_000);

  it('carries the trace context of the transaction that wrote the event', async () => {
    const traceId = await trace.getTracer('test').startActiveSpan('request', async (span) => {
      await db.transaction((tx) =>
        outbox.add(tx, { type: 'budgets.budget.breached', subject: 'bdg_1', data: {} }),
      );
      span.end();
      return span.spanContext().traceId;
    });
    await eventually(() => expect(received).toHaveLength(1));
    expect(received[0]?.traceparent?.split('-')[1]).toBe(traceId);
  });

  it('flush() publishes everything pending and reports how many', async () => {
    await relay.stop(); // only flush() publishes now
    await db.transaction(async (tx) => {
      for (let i = 0; i < 3; i++) await outbox.add(tx, { type: 'budgets.project.created', data: { i } });
    });
    expect(await relay.flush()).toBe(3);
    expect(await relay.flush()).toBe(0);
    await eventually(() => expect(received.map((e) => e.data)).toEqual([{ i: 0 }, { i: 1 }, { i: 2 }]));
  });
});

// These relays only poll (every 10 s), so nothing but the test's own flush() calls runs a round: a commit's
// NOTIFY or the listener's catch-up wake-up would otherwise start one at a moment the test does not choose.
const pollingOnly = (): Db => ({ ...db, listen: undefined });

describe('outbox relay failures', () => {
  it('logs a failed publish once and publishes on a later round, in order', async () => {
    const { logger, lines } = captureLogger();
    const inner = createMemoryBus({ logger });
    const published: string[] = [];
    let down = true;
    const flaky: Bus = {
      ...inner,
      async publish(event) {
        if (down) throw new Error('nats: no responders');
        published.push(event.id);
        await inner.publish(event);
      },
    };
    const relay = startOutboxRelay({ db: pollingOnly(), bus: flaky, logger, pollMs: 10_000 });
    try {
      await relay.flush(); // the first round, started at once, sees an empty outbox
      const written = await db.transaction(async (tx) => [
        await outbox.add(tx, { type: 'budgets.project.created', data: {} }),
        await outbox.add(tx, { type: 'budgets.project.deleted', data: {} }),
      ]);

      expect(await relay.flush()).toBe(0);
      expect(await relay.flush()).toBe(0);
      expect(await unpublished()).toEqual(written.map((e) => e.id));
      const errors = lines.filter((line) => line.level === 'error');
      expect(errors).toHaveLength(1);
      expect(errors[0]?.err).toMatchObject({ message: 'nats: no responders' });

      down = false;
      expect(await relay.flush()).toBe(2);
      expect(published).toEqual(written.map((e) => e.id));
      expect(await unpublished()).toEqual([]);
    } finally {
      await relay.stop();
      await inner.close();
    }
  });

  it.runIf(process.env.DATABASE_URL)(
    'lets two relays on one Postgres share the outbox without publishing a row twice',
    async () => {
      const { logger } = captureLogger();
      const published: string[] = [];
      const counting = {
        ...createMemoryBus({ logger }),
        publish: async (event: CloudEvent) => void published.push(event.id),
      };
      for (let batch = 0; batch < 5; batch++) {
        await db.transaction(async (tx) => {
          for (let i = 0; i < 20; i++)
            await outbox.add(tx, { type: 'budgets.project.created', data: { batch, i } });
        });
      }
      const relays = [1, 2].map(() =>
        startOutboxRelay({ db: pollingOnly(), bus: counting, logger, pollMs: 10_000, batchSize: 7 }),
      );
      try {
        const counts = await Promise.all(relays.map((relay) => relay.flush()));
        expect(counts[0]! + counts[1]!).toBe(100);
      } finally {
        await Promise.all(relays.map((relay) => relay.stop()));
      }
      expect(new Set(published).size).toBe(100);
      expect(published).toHaveLength(100);
      expect(await unpublished()).toEqual([]);
    },
  );
});

describe('outbox relay wake-up', () => {
  it('publishes a committed event at once, not at the next poll', async () => {
    const { logger, lines } = captureLogger();
    const bus = createMemoryBus({ logger });
    const received: string[] = [];
    const consumer = await bus.consume({
      durable: 'woken',
      types: ['budgets.>'],
      handler: async (event) => void received.push(event.id),
    });
    const relay = startOutboxRelay({ db, bus, logger, pollMs: 5_000 });
    try {
      await relay.flush(); // the first round, started at once, sees an empty outbox; now it sleeps 5 s
      await eventually(() => expect(lines.map((line) => line.msg)).toContain('listening for outbox commits'));
      for (let i = 0; i < 3; i++) {
        const event = await db.transaction((tx) =>
          outbox.add(tx, { type: 'budgets.apikey.revoked', data: { i } }),
        );
        const committed = Date.now();
        // Half the 5 s poll: only the wake-up at commit can meet it, with room for a loaded machine.
        await eventually(() => expect(received).toContain(event.id), 2_500);
        expect(Date.now() - committed).toBeLessThan(2_500);
      }
    } finally {
      await relay.stop();
      await consumer.stop();
      await bus.close();
    }
  });
});

describe.runIf(process.env.DATABASE_URL)('outbox relay whose listening connection drops', () => {
  it('listens again by itself, and commits wake it as before', async () => {
    const { logger, lines } = captureLogger();
    const bus = createMemoryBus({ logger });
    const published: string[] = [];
    const recording: Bus = { ...bus, publish: async (event) => void published.push(event.id) };
    const relay = startOutboxRelay({ db, bus: recording, logger, pollMs: 5_000 });
    const listeners = async () =>
      (
        await db.query<{ pid: number }>(
          `SELECT pid FROM pg_stat_activity WHERE query = 'LISTEN ' || left('outbox_' || current_schema(), 63)`,
        )
      ).rows;
    try {
      const [first] = await eventually(async () => {
        const found = await listeners();
        expect(found).toHaveLength(1);
        return found;
      });
      await db.query('SELECT pg_terminate_backend($1)', [first!.pid]);
      await eventually(() =>
        expect(lines.map((line) => line.msg)).toContain('listening for outbox commits again'),
      );
      expect(lines.filter((line) => line.msg.startsWith('not listening'))).toHaveLength(1);
      expect((await listeners()).map((row) => row.pid)).not.toContain(first!.pid);

      const event = await db.transaction((tx) =>
        outbox.add(tx, { type: 'budgets.apikey.revoked', data: {} }),
      );
      // Half the 5 s poll, as above: only a wake-up at commit meets it.
      await eventually(() => expect(published).toContain(event.id), 2_500);
    } finally {
      await relay.stop();
      await bus.close();
    }
  });
});

describe('outbox relay while the database is down', () => {
  it('logs once per outage, backs off, and publishes what was written once it is back', async () => {
    const { logger, lines } = captureLogger();
    const bus = createMemoryBus({ logger });
    const published: string[] = [];
    const recording: Bus = { ...bus, publish: async (event) => void published.push(event.id) };
    let down = false;
    let reads = 0;
    const failing = <T>(run: () => Promise<T>): Promise<T> => {
      if (!down) return run();
      reads++;
      return Promise.reject(new Error('connect ECONNREFUSED 127.0.0.1:5432'));
    };
    const flaky: Db = {
      ...db,
      query: (sql, params) => failing(() => db.query(sql, params)),
      transaction: (fn) => failing(() => db.transaction(fn)),
    };
    const relay = startOutboxRelay({ db: flaky, bus: recording, logger, pollMs: 10 });
    try {
      await relay.flush();
      down = true;
      await sleep(500);
      // Backing off from 10 ms (doubling), it looks about 6 times in 500 ms rather than 50.
      expect(reads).toBeGreaterThan(1);
      expect(reads).toBeLessThan(15);
      const errors = lines.filter((line) => line.level === 'error');
      expect(errors.map((line) => line.msg)).toEqual(['reading the outbox failed; retrying with backoff']);

      const event = await db.transaction((tx) =>
        outbox.add(tx, { type: 'budgets.project.created', data: {} }),
      );
      down = false;
      await eventually(() => expect(published).toContain(event.id), 3_000);
      await eventually(() =>
        expect(lines.some((line) => line.msg === 'reading the outbox works again')).toBe(true),
      );
      expect(lines.filter((line) => line.level === 'error')).toHaveLength(1);
    } finally {
      await relay.stop();
      await bus.close();
    }
  });
});

describe('outbox entries', () => {
  it('encodes proto messages as JSON and decodes them back, ignoring unknown fields', async () => {
    const message = create(events.ProjectDeletedSchema, { projectId: 'prj_1', teamId: 'team_1' });
    const event = await db.transaction((tx) =>
      outbox.addMessage(tx, {
        type: 'budgets.project.deleted',
        subject: 'prj_1',
        schema: events.ProjectDeletedSchema,
        message,
      }),
    );
    expect(event.data).toEqual({ projectId: 'prj_1', teamId: 'team_1' });
    const { rows } = await db.query<{ data: unknown }>('SELECT data FROM outbox WHERE id = $1', [event.id]);
    expect(rows[0]?.data).toEqual({ projectId: 'prj_1', teamId: 'team_1' });

    const fromNewerProducer = {
      ...event,
      data: { projectId: 'prj_1', teamId: 'team_1', reason: 'added later' },
    };
    expect(decodeEvent(events.ProjectDeletedSchema, fromNewerProducer)).toMatchObject({
      projectId: 'prj_1',
      teamId: 'team_1',
    });
  });

  it('writes every field, defaults included, for consumers that read raw JSON', async () => {
    const message = create(events.ProjectChangedSchema, { projectId: 'prj_1' });
    const event = await db.transaction((tx) =>
      outbox.addMessage(tx, {
        type: 'budgets.project.created',
        schema: events.ProjectChangedSchema,
        message,
      }),
    );
    expect(event.data).toMatchObject({ projectId: 'prj_1', name: '', connectionIds: [], changedFields: [] });
  });

  it('builds the envelope from the injected clock and id generator', async () => {
    const fixed = createOutbox({
      source: 'budgets',
      newId: () => 'evt_fixed',
      now: () => new Date('2025-03-04T05:06:07Z'),
    });
    const event = await db.transaction((tx) =>
      fixed.add(tx, { type: 'budgets.project.created', data: { a: 1 } }),
    );
    expect(event).toEqual({
      specversion: '1.0',
      id: 'evt_fixed',
      source: 'budgets',
      type: 'budgets.project.created',
      time: '2025-03-04T05:06:07.000Z',
      datacontenttype: 'application/json',
      data: { a: 1 },
    });
  });

  it('refuses an event type that does not start with the producing service', async () => {
    await expect(
      db.transaction((tx) => outbox.add(tx, { type: 'scanner.scan.completed', data: {} })),
    ).rejects.toThrow(/'scanner.scan.completed' must start with its producing service 'budgets.'/);
  });
});

import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { migrate, type Db } from '@costgov/db';
import { freshDb, captureLogger, eventually } from '@costgov/testing';
import type { Consumer } from '../src/bus';
import { outboxMigration } from '../src/migration';
import { createOutbox, outboxBacklog } from '../src/outbox';
import { busImplementations, testEvent, type BusUnderTest } from './support';

describe.each(busImplementations)('what the $name bus tells its metrics', (implementation) => {
  let testBus: BusUnderTest;
  const consumers: Consumer[] = [];
  const redelivered: Array<{ system: string; durable: string }> = [];

  afterEach(async () => {
    await Promise.all(consumers.splice(0).map((consumer) => consumer.stop()));
    await testBus.close();
    redelivered.length = 0;
  });

  const open = async () => {
    testBus = await implementation.open(captureLogger().logger, {
      observer: { redelivered: (delivery) => redelivered.push(delivery) },
    });
    return testBus.bus;
  };

  it("reports each redelivery with its consumer's name, and none for a first delivery", async () => {
    const bus = await open();
    let deliveries = 0;
    consumers.push(
      await bus.consume({
        durable: 'flaky',
        types: ['budgets.>'],
        backoffMs: 10,
        handler: async (_event, { deliveryCount }) => {
          deliveries = deliveryCount;
          if (deliveryCount < 3) throw new Error('not yet');
        },
      }),
    );
    await bus.publish(testEvent());
    await eventually(() => expect(deliveries).toBe(3));
    expect(redelivered).toEqual([
      { system: implementation.name, durable: `${testBus.namespace}_flaky` },
      { system: implementation.name, durable: `${testBus.namespace}_flaky` },
    ]);
  });

  it("reports a durable's messages not yet handed to it under its consumer's name, and 0 once caught up", async () => {
    const bus = await open();
    let release!: () => void;
    const blocked = new Promise<void>((resolve) => (release = resolve));
    let handled = 0;
    consumers.push(
      await bus.consume({
        durable: 'slow',
        types: ['budgets.>'],
        handler: async () => {
          await blocked;
          handled++;
        },
      }),
    );
    for (let i = 0; i < 5; i++) await bus.publish(testEvent());
    // The name the broker knows the consumer by (`nats consumer ls`), namespace included, on either bus.
    const consumer = `${testBus.namespace}_slow`;
    const lags = async () => (await bus.consumerLag!()).filter((lag) => lag.system === implementation.name);
    const pendingOf = async () => (await lags()).find((lag) => lag.durable === consumer)?.pending;
    // One (or a prefetched few) is being handled; the rest wait.
    await eventually(async () => expect(await pendingOf()).toBeGreaterThanOrEqual(1));
    release();
    await eventually(() => expect(handled).toBe(5));
    await eventually(async () => expect(await pendingOf()).toBe(0));
    expect((await lags()).map((lag) => lag.durable)).toEqual([consumer]);
  });
});

describe('the outbox backlog', () => {
  let db: Db;
  beforeAll(async () => {
    db = await freshDb('bus_backlog');
    await migrate(db, [outboxMigration]);
  });
  afterAll(() => db.close());

  it('counts unpublished events and the age of the oldest; 0 and 0 when all are published', async () => {
    expect(await outboxBacklog(db)).toEqual({ pending: 0, oldestAgeSeconds: 0 });
    const outbox = createOutbox({ source: 'budgets' });
    await outbox.add(db, { type: 'budgets.project.deleted', data: {} });
    await db.query(`UPDATE outbox SET created_at = created_at - interval '90 seconds'`);
    await outbox.add(db, { type: 'budgets.project.deleted', data: {} });
    const backlog = await outboxBacklog(db);
    expect(backlog.pending).toBe(2);
    expect(backlog.oldestAgeSeconds).toBeGreaterThanOrEqual(90);
    expect(backlog.oldestAgeSeconds).toBeLessThan(3600);
    await db.query('UPDATE outbox SET published_at = now()');
    expect(await outboxBacklog(db)).toEqual({ pending: 0, oldestAgeSeconds: 0 });
  });
});

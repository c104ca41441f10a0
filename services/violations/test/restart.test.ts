import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Db } from '@costgov/db';
import { startService, type RunningService } from '@costgov/runtime';
import { freshDb, testBus } from '@costgov/testing';
import { violationsModule } from '../src/module';
import {
  budgetsEvent,
  deliver,
  logger,
  newBudget,
  processed,
  violationEvents,
  violationsOf,
} from './fixture';

let bus: Awaited<ReturnType<typeof testBus>>;
let db: Db;
let service: RunningService | undefined;

// The database outlives each service instance, as a real one outlives a killed process.
const start = () =>
  startService(violationsModule(), {
    logger,
    bus,
    openDb: async () => ({ ...db, close: async () => undefined }),
    dataDir: 'memory',
    grpcAddress: '127.0.0.1:0',
  });

/** What the helpers read: the bus and the database, whichever service instance runs now. */
const current = () => ({ bus, db });

beforeAll(async () => {
  bus = await testBus(logger);
  db = await freshDb('violations');
  service = await start();
});

afterAll(async () => {
  await service?.stop();
  await db?.close();
  await bus?.close();
});

describe('a violations service stopped and restarted mid-stream', () => {
  it('opens each crossing once: what arrived while it was down, and what it saw before', async () => {
    const ref = newBudget();
    const crossed = 'budgets.budget.threshold_crossed' as const;
    const fifty = budgetsEvent(crossed, { ...ref, threshold: 50 });
    await deliver(current(), fifty);
    await service!.stop();
    service = undefined;

    // While it is down: the rest of the stream, and the first crossing once more.
    const later = [80, 100].map((threshold) => budgetsEvent(crossed, { ...ref, threshold }));
    for (const event of later) await bus.publish(event);
    await bus.publish({ ...fifty }, { dedupeId: `${fifty.id}-again` });

    service = await start();
    for (const event of later) await processed(current(), event);
    const rows = await violationsOf(current(), ref.budgetId);
    expect(rows.map((r) => [r.threshold_percentage, r.severity])).toEqual([
      [50, 'info'],
      [80, 'warning'],
      [100, 'critical'],
    ]);
    expect(await violationEvents(current(), { budgetId: ref.budgetId })).toHaveLength(3);
  });
});

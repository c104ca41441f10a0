import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { create } from '@bufbuild/protobuf';
import { createOutbox, outboxMigration, startOutboxRelay, type CloudEvent } from '@costgov/bus';
import { events } from '@costgov/contracts';
import { migrate, type Db } from '@costgov/db';
import { newId } from '@costgov/ids';
import { createLogger } from '@costgov/log';
import { startService, type RunningService } from '@costgov/runtime';
import { eventually, freshDb, testBus } from '@costgov/testing';
import { violationsModule } from '../src/module';

const logger = createLogger('test', 'silent');
let bus: Awaited<ReturnType<typeof testBus>>;
let service: RunningService;
let db: Db;
let producerDb: Db;

beforeAll(async () => {
  bus = await testBus(logger);
  db = await freshDb('violations');
  producerDb = await freshDb('producer');
  await migrate(producerDb, [outboxMigration]);
  service = await startService(violationsModule(), {
    logger,
    bus,
    openDb: async () => db,
    dataDir: 'memory',
    grpcAddress: '127.0.0.1:0',
  });
});

afterAll(async () => {
  await service?.stop();
  await producerDb?.close();
  await bus?.close();
});

async function insertViolation(teamId: string, projectId: string) {
  await db.query(
    `INSERT INTO violations (id, team_id, project_id, budget_id, type, severity, message, current_value,
       threshold_value, threshold_percentage, currency, period_start)
     VALUES ($1, $2, $3, $4, 'budget_threshold_breach', 'warning', 'over 80%', 850, 800, 80, 'USD', '2026-11-01')`,
    [newId('violation'), teamId, projectId, newId('budget')],
  );
}

const countFor = async (projectId: string) =>
  (
    await db.query<{ n: number }>('SELECT count(*)::int AS n FROM violations WHERE project_id = $1', [
      projectId,
    ])
  ).rows[0]!.n;

describe('purge on budgets.project.deleted', () => {
  it("removes only the deleted project's violations, once, even when the event arrives twice", async () => {
    const teamId = newId('team');
    const doomed = newId('project');
    const kept = newId('project');
    await insertViolation(teamId, doomed);
    await insertViolation(teamId, doomed);
    await insertViolation(teamId, kept);

    // Published the way the budgets service does it: outbox row in a transaction, then the relay.
    const outbox = createOutbox({ source: 'budgets' });
    const event: CloudEvent = await producerDb.transaction((tx) =>
      outbox.addMessage(tx, {
        type: 'budgets.project.deleted',
        subject: doomed,
        schema: events.ProjectDeletedSchema,
        message: create(events.ProjectDeletedSchema, { projectId: doomed, teamId }),
      }),
    );
    const relay = startOutboxRelay({ db: producerDb, bus, logger });
    await relay.flush();
    await relay.stop();

    const purge = await eventually(
      async () => (await db.query('SELECT * FROM project_purges WHERE project_id = $1', [doomed])).rows[0],
    );
    expect(purge).toMatchObject({ team_id: teamId, event_id: event.id, violations_removed: 2 });
    expect(await countFor(doomed)).toBe(0);
    expect(await countFor(kept)).toBe(1);

    // A redelivery of the same event (same id, past the publish dedupe) must change nothing.
    await insertViolation(teamId, doomed);
    await bus.publish({ ...event }, { dedupeId: `${event.id}-again` });
    await eventually(async () => {
      const { rows } = await db.query<{ n: number }>(
        'SELECT count(*)::int AS n FROM inbox WHERE event_id = $1',
        [event.id],
      );
      return rows[0]!.n === 1 ? true : undefined;
    });
    await new Promise((resolve) => setTimeout(resolve, 500));
    expect(await countFor(doomed)).toBe(1);
    expect(
      (await db.query('SELECT * FROM project_purges WHERE project_id = $1', [doomed])).rows,
    ).toHaveLength(1);
  });
});

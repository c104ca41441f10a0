import { create } from '@bufbuild/protobuf';
import { encodePayload, type CloudEvent } from '@costgov/bus';
import { events, notifier } from '@costgov/contracts';
import type { Db } from '@costgov/db';
import { newId } from '@costgov/ids';
import { createLogger } from '@costgov/log';
import { createRpcClient, type RpcClient } from '@costgov/rpc';
import { startService, type RunningService } from '@costgov/runtime';
import { eventually, freshDb, testBus } from '@costgov/testing';
import { notifierModule, type NotifierModule, type NotifierOptions } from '../src/module';

export const logger = createLogger('test', process.env.TEST_LOG ? 'debug' : 'silent');

/** A clock the test moves; starts at the real time so receivers' timestamp checks pass. */
export function testClock(start = new Date()) {
  let at = start.getTime();
  return {
    now: () => new Date(at),
    advance(ms: number) {
      at += ms;
    },
    set(date: Date) {
      at = date.getTime();
    },
  };
}

export interface Notifier {
  module: NotifierModule;
  service: RunningService;
  client: RpcClient<typeof notifier.WebhooksService>;
}

export interface Fixture {
  bus: Awaited<ReturnType<typeof testBus>>;
  db: Db;
  clock: ReturnType<typeof testClock>;
  notifiers: Notifier[];
  /** The first notifier's client. */
  client: RpcClient<typeof notifier.WebhooksService>;
  /** Another notifier module on the same database and bus (a second replica). */
  addReplica(): Promise<Notifier>;
  stop(): Promise<void>;
}

export interface FixtureOptions extends NotifierOptions {
  env?: NodeJS.ProcessEnv;
}

/** The notifier on a fresh database and bus, with a controlled clock, and a gRPC client to it. */
export async function startNotifier(options: FixtureOptions = {}): Promise<Fixture> {
  const bus = await testBus(logger);
  const db = await freshDb('notifier');
  const clock = testClock();
  const { env = {}, ...moduleOptions } = options;
  const notifiers: Notifier[] = [];
  const addReplica = async (): Promise<Notifier> => {
    const module = notifierModule({ dispatchLoop: false, ...moduleOptions });
    const service = await startService(module, {
      logger,
      bus,
      // Replicas share the database (on Postgres its pool: claims run on separate connections).
      openDb: async () => (notifiers.length > 0 ? shareDb(db) : db),
      dataDir: 'memory',
      grpcAddress: '127.0.0.1:0',
      env: { WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true', ...env },
      now: clock.now,
    });
    const client = createRpcClient(notifier.WebhooksService, `127.0.0.1:${service.port}`);
    const replica = { module, service, client };
    notifiers.push(replica);
    return replica;
  };
  const first = await addReplica();
  return {
    bus,
    db,
    clock,
    notifiers,
    client: first.client,
    addReplica,
    async stop() {
      for (const replica of notifiers.reverse()) {
        replica.client.close();
        // The first replica's stop closes the shared database (and drops the test schema).
        await replica.service.stop();
      }
      await bus.close();
    },
  };
}

/** The same database, whose close leaves it to its owner (the first replica). */
function shareDb(db: Db): Db {
  return { ...db, close: async () => undefined };
}

export const teamCtx = (teamId: string) => ({ teamId });

/** A CloudEvent as a producer's outbox relay publishes it. */
export function violationCreated(teamId: string, violationId = newId('violation')): CloudEvent {
  return {
    specversion: '1.0',
    id: newId('event'),
    source: 'violations',
    type: 'violations.violation.created',
    subject: violationId,
    time: new Date().toISOString(),
    datacontenttype: 'application/json',
    data: encodePayload(
      events.ViolationChangedSchema,
      create(events.ViolationChangedSchema, {
        violationId,
        teamId,
        projectId: newId('project'),
        budgetId: newId('budget'),
        severity: 'critical',
        status: 'open',
      }),
    ),
  };
}

export function eventOf(type: string, teamId: string): CloudEvent {
  return {
    specversion: '1.0',
    id: newId('event'),
    source: type.split('.')[0]!,
    type,
    time: new Date().toISOString(),
    datacontenttype: 'application/json',
    data: { teamId },
  };
}

/** Waits until the notifier has processed the event (its id is in the inbox). */
export async function processed(db: Db, event: CloudEvent): Promise<void> {
  await eventually(async () => {
    const { rows } = await db.query('SELECT 1 FROM inbox WHERE event_id = $1', [event.id]);
    return rows.length > 0 ? true : undefined;
  });
}

/** Publishes events and waits until each was processed. */
export async function publish(fixture: Pick<Fixture, 'bus' | 'db'>, ...list: CloudEvent[]): Promise<void> {
  for (const event of list) await fixture.bus.publish(event);
  for (const event of list) await processed(fixture.db, event);
}

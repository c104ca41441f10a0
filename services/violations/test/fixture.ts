import { create } from '@bufbuild/protobuf';
import { encodePayload, type CloudEvent } from '@costgov/bus';
import { events, violations } from '@costgov/contracts';
import type { Db } from '@costgov/db';
import { newId } from '@costgov/ids';
import { createLogger } from '@costgov/log';
import { createRpcClient, type RpcClient } from '@costgov/rpc';
import { startService, type RunningService } from '@costgov/runtime';
import { eventually, freshDb, testBus } from '@costgov/testing';
import { violationsModule } from '../src/module';

export const logger = createLogger('test', 'silent');

export interface Fixture {
  bus: Awaited<ReturnType<typeof testBus>>;
  service: RunningService;
  db: Db;
  client: RpcClient<typeof violations.ViolationsService>;
  stop(): Promise<void>;
}

/** The violations service on a fresh database and bus, and a gRPC client to it. */
export async function startViolations(): Promise<Fixture> {
  const bus = await testBus(logger);
  const db = await freshDb('violations');
  const service = await startService(violationsModule(), {
    logger,
    bus,
    openDb: async () => db,
    dataDir: 'memory',
    grpcAddress: '127.0.0.1:0',
  });
  const client = createRpcClient(violations.ViolationsService, `127.0.0.1:${service.port}`);
  return {
    bus,
    service,
    db,
    client,
    async stop() {
      client.close();
      await service.stop();
      await bus.close();
    },
  };
}

/** A budget's identity as the threshold events carry it. */
export interface BudgetRef {
  teamId: string;
  projectId: string;
  budgetId: string;
}

export const newBudget = (teamId = newId('team'), projectId = newId('project')): BudgetRef => ({
  teamId,
  projectId,
  budgetId: newId('budget'),
});

export type Crossing = Partial<events.BudgetThresholdCrossed> & BudgetRef & { threshold: number };

/** A CloudEvent as budgets' outbox relay publishes it. */
export function budgetsEvent(
  type: 'budgets.budget.threshold_crossed' | 'budgets.budget.breached',
  crossing: Crossing,
): CloudEvent {
  const amount = crossing.amount ?? 1000;
  const spend = crossing.currentSpend ?? (amount * Math.max(crossing.threshold, 1)) / 100 + 1;
  const message = create(events.BudgetThresholdCrossedSchema, {
    budgetName: 'Cloud spend',
    projectName: 'checkout',
    amount,
    currentSpend: spend,
    percentageUsed: (spend / amount) * 100,
    currency: 'USD',
    period: 'monthly',
    periodStart: '2026-11-01',
    periodEnd: '2026-12-01',
    ...crossing,
  });
  return {
    specversion: '1.0',
    id: newId('event'),
    source: 'budgets',
    type,
    subject: crossing.budgetId,
    time: new Date().toISOString(),
    datacontenttype: 'application/json',
    data: encodePayload(events.BudgetThresholdCrossedSchema, message),
  };
}

export function budgetDeletedEvent(ref: BudgetRef): CloudEvent {
  return {
    specversion: '1.0',
    id: newId('event'),
    source: 'budgets',
    type: 'budgets.budget.deleted',
    subject: ref.budgetId,
    time: new Date().toISOString(),
    datacontenttype: 'application/json',
    data: encodePayload(
      events.BudgetChangedSchema,
      create(events.BudgetChangedSchema, {
        budgetId: ref.budgetId,
        teamId: ref.teamId,
        projectId: ref.projectId,
        name: 'Cloud spend',
        amount: 1000,
        currency: 'USD',
        period: 'monthly',
        status: 'active',
      }),
    ),
  };
}

/** Waits until the service has processed the event (its id is in the inbox). */
export async function processed(fixture: Pick<Fixture, 'db'>, event: CloudEvent): Promise<void> {
  await eventually(async () => {
    const { rows } = await fixture.db.query('SELECT 1 FROM inbox WHERE event_id = $1', [event.id]);
    return rows.length > 0 ? true : undefined;
  });
}

/** Publishes events in order and waits until each was processed. */
export async function deliver(fixture: Pick<Fixture, 'bus' | 'db'>, ...list: CloudEvent[]): Promise<void> {
  for (const event of list) await fixture.bus.publish(event);
  for (const event of list) await processed(fixture, event);
}

/** The violations of a budget, lowest threshold first, as the service stores them. */
export async function violationsOf(fixture: Pick<Fixture, 'db'>, budgetId: string) {
  const { rows } = await fixture.db.query<{
    id: string;
    severity: string;
    status: string;
    threshold_percentage: number;
    current_value: number;
    threshold_value: number;
    message: string;
  }>(
    `SELECT id, severity, status, threshold_percentage, current_value, threshold_value, message
     FROM violations WHERE budget_id = $1 ORDER BY threshold_percentage`,
    [budgetId],
  );
  return rows;
}

/** The violation events the service wrote to its outbox for one violation or budget, oldest first. */
export async function violationEvents(
  fixture: Pick<Fixture, 'db'>,
  where: { budgetId?: string; violationId?: string },
) {
  const { rows } = await fixture.db.query<{ type: string; data: events.ViolationChanged }>(
    `SELECT type, data FROM outbox WHERE type LIKE 'violations.violation.%'
       AND ($1::text IS NULL OR data->>'budgetId' = $1) AND ($2::text IS NULL OR data->>'violationId' = $2)
     ORDER BY created_at, id`,
    [where.budgetId ?? null, where.violationId ?? null],
  );
  return rows;
}

/** Opens one violation for a fresh budget of the team and returns its id. */
export async function openViolation(
  fixture: Fixture,
  teamId: string,
  threshold = 80,
  projectId = newId('project'),
): Promise<string> {
  const ref = newBudget(teamId, projectId);
  await deliver(fixture, budgetsEvent('budgets.budget.threshold_crossed', { ...ref, threshold }));
  const [row] = await violationsOf(fixture, ref.budgetId);
  return row!.id;
}

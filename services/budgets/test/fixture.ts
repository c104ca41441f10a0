import { decodeEvent, type CloudEvent } from '@costgov/bus';
import { budgets, events } from '@costgov/contracts';
import { UnavailableError } from '@costgov/errors';
import { newId } from '@costgov/ids';
import { createLogger } from '@costgov/log';
import { createRpcClient, type RpcClient } from '@costgov/rpc';
import { startService, type RunningService } from '@costgov/runtime';
import { freshDb, testBus } from '@costgov/testing';
import type { SpendQuery, SpendSource } from '../src/budgets/spend';
import { budgetsModule } from '../src/module';
import type { TeamConnections } from '../src/projects/team-connections';
import type { TeamUsers } from '../src/projects/team-users';

export const logger = createLogger('test', 'silent');

/**
 * The budgets service on a fresh database and bus, with costs and identity stand-ins and a clock the
 * test moves. Spend is what the test sets per connection (and per value of the `team` tag when a budget
 * filters on it), all usage-based but what `fixedSpend` names per connection (recurring fees, purchases:
 * counted once by the forecast); every query costs was asked is kept.
 */
export async function startBudgets() {
  const clock = { now: new Date('2026-11-10T12:00:00.000Z') };
  const spend = new Map<string, number>();
  const fixedSpend = new Map<string, number>();
  const unconverted = new Map<string, Array<{ currency: string; amount: number }>>();
  const lastChargeDay = { value: null as string | null };
  const queries: SpendQuery[] = [];
  const costs = { down: false };
  const spendSource: SpendSource = {
    async spendOf(query) {
      queries.push(query);
      if (costs.down) throw new UnavailableError('costs is down (stand-in)');
      let converted = 0;
      let fixed = 0;
      for (const id of query.connectionIds) {
        converted += spend.get(query.tags.team ? `${id}#${query.tags.team}` : id) ?? 0;
        fixed += fixedSpend.get(id) ?? 0;
      }
      return {
        converted,
        unconverted: query.connectionIds.flatMap((id) => unconverted.get(id) ?? []),
        lastChargeDay: lastChargeDay.value,
        usage: converted - fixed,
        lastUsageDay: lastChargeDay.value,
      };
    },
  };
  const teamUsers: TeamUsers = { activeUserIds: async () => new Set() };
  const teamConnections: TeamConnections = { missingIds: async () => new Set() };

  const bus = await testBus(logger);
  const db = await freshDb('budgets');
  const service: RunningService = await startService(
    budgetsModule({ teamUsers, teamConnections, spendSource }),
    {
      logger,
      bus,
      env: { BUDGET_EVALUATION_INTERVAL_MS: '100' },
      openDb: async () => db,
      dataDir: 'memory',
      grpcAddress: '127.0.0.1:0',
      now: () => clock.now,
    },
  );
  const address = `127.0.0.1:${service.port}`;
  const client: RpcClient<typeof budgets.BudgetsService> = createRpcClient(budgets.BudgetsService, address);
  const projects: RpcClient<typeof budgets.ProjectsService> = createRpcClient(
    budgets.ProjectsService,
    address,
  );
  const received: CloudEvent[] = [];
  await bus.consume({
    durable: 'budgets_test_budget_events',
    types: ['budgets.budget.>'],
    handler: async (event) => {
      received.push(event);
    },
  });

  return {
    clock,
    spend,
    fixedSpend,
    unconverted,
    lastChargeDay,
    queries,
    costs,
    bus,
    db,
    client,
    projects,
    received,
    /** Events about one budget, oldest first, as `type` or `type:threshold`. */
    eventsOf(budgetId: string): string[] {
      return received
        .filter((event) => event.subject === budgetId)
        .map((event) =>
          event.type === 'budgets.budget.threshold_crossed' || event.type === 'budgets.budget.breached'
            ? `${event.type}:${decodeEvent(events.BudgetThresholdCrossedSchema, event).threshold}`
            : event.type,
        );
    },
    /** Publishes `costs.data.ingested` for a connection, as costs does after storing a file. */
    async ingested(teamId: string, connectionId: string): Promise<CloudEvent> {
      const event: CloudEvent = {
        specversion: '1.0',
        id: newId('event'),
        source: 'costs',
        type: 'costs.data.ingested',
        subject: connectionId,
        time: new Date().toISOString(),
        datacontenttype: 'application/json',
        data: { connectionId, teamId, rows: '1', billingPeriods: ['2026-11-01'] },
      };
      await bus.publish(event);
      return event;
    },
    async stop() {
      client.close();
      projects.close();
      await service.stop();
      await bus.close();
    },
  };
}

export type BudgetsFixture = Awaited<ReturnType<typeof startBudgets>>;

export const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

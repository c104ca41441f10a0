import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { CloudEvent } from '@costgov/bus';
import { budgets } from '@costgov/contracts';
import type { Db } from '@costgov/db';
import { newId } from '@costgov/ids';
import { createRpcClient, type RpcClient } from '@costgov/rpc';
import { startService, type RunningService } from '@costgov/runtime';
import { eventually, freshDb, testBus } from '@costgov/testing';
import type { SpendSource } from '../src/budgets/spend';
import { budgetsModule } from '../src/module';
import { logger, sleep } from './fixture';

/**
 * Two budgets replicas on one database and one bus (on Postgres each with its own connections, so their
 * evaluations really run at the same time): ingest events, PATCHes and both sweeps hit one budget at
 * once, and each threshold must still be reported once.
 */
const spend = new Map<string, number>();
// Slow answers widen the window in which two evaluations of one budget would overlap without the lock.
const spendSource: SpendSource = {
  async spendOf({ connectionIds }) {
    await sleep(20);
    const converted = spend.get(connectionIds[0]!) ?? 0;
    return { converted, unconverted: [], lastChargeDay: null, usage: converted, lastUsageDay: null };
  },
};

let db: Db;
let bus: Awaited<ReturnType<typeof testBus>>;
const replicas: RunningService[] = [];
const clients: Array<RpcClient<typeof budgets.BudgetsService>> = [];
let projects: RpcClient<typeof budgets.ProjectsService>;
const received: CloudEvent[] = [];

beforeAll(async () => {
  bus = await testBus(logger);
  db = await freshDb('budgets');
  const shared: Db = { ...db, close: async () => undefined };
  for (let i = 0; i < 2; i++) {
    const replica = await startService(
      budgetsModule({
        teamUsers: { activeUserIds: async () => new Set() },
        teamConnections: { missingIds: async () => new Set() },
        spendSource,
      }),
      {
        logger,
        bus,
        env: { BUDGET_EVALUATION_INTERVAL_MS: '100' },
        openDb: async () => shared,
        dataDir: 'memory',
        grpcAddress: '127.0.0.1:0',
      },
    );
    replicas.push(replica);
    clients.push(createRpcClient(budgets.BudgetsService, `127.0.0.1:${replica.port}`));
  }
  projects = createRpcClient(budgets.ProjectsService, `127.0.0.1:${replicas[0]!.port}`);
  await bus.consume({
    durable: 'budgets_test_replicas',
    types: ['budgets.budget.>'],
    handler: async (event) => {
      received.push(event);
    },
  });
});

afterAll(async () => {
  for (const client of clients) client.close();
  projects?.close();
  for (const replica of replicas) await replica.stop();
  await bus?.close();
  await db?.close();
});

describe(`several budgets replicas (${process.env.DATABASE_URL ? 'postgres' : 'pglite'})`, () => {
  it('report each threshold once however many evaluations of one budget run at the same time', async () => {
    const team = { teamId: newId('team') };
    const connection = newId('connection');
    const project = await projects.createProject({ name: 'shared', connectionIds: [connection] }, team);
    const budget = await clients[0]!.createBudget(
      { projectId: project.id, name: 'b', amount: 1000, currency: 'USD', thresholds: [50, 80, 100] },
      team,
    );
    spend.set(connection, 900);
    const ingested = (): CloudEvent => ({
      specversion: '1.0',
      id: newId('event'),
      source: 'costs',
      type: 'costs.data.ingested',
      subject: connection,
      time: new Date().toISOString(),
      datacontenttype: 'application/json',
      data: { connectionId: connection, teamId: team.teamId },
    });
    await Promise.all([
      ...Array.from({ length: 6 }, () => bus.publish(ingested())),
      // Changes that alter spend: each is evaluated before its answer.
      ...clients.map((client, i) =>
        client.updateBudget({ id: budget.id, tags: { values: { k: `${i}` } } }, team),
      ),
      ...clients.map((client, i) => client.updateBudget({ id: budget.id, amount: 1000.25 + i / 4 }, team)),
    ]);
    await eventually(async () => {
      const read = await clients[1]!.getBudget({ id: budget.id }, team);
      return read.currentSpend === 900 ? read : undefined;
    });
    const crossings = () =>
      received
        .filter((e) => e.subject === budget.id && e.type === 'budgets.budget.threshold_crossed')
        .map((e) => (e.data as { threshold: number }).threshold)
        .sort((a, b) => a - b);
    // Both crossings arrive through the outbox and the bus (a loaded machine may take a while); then any
    // duplicate from a late evaluation has time to follow them.
    await eventually(() => (crossings().length >= 2 ? true : undefined));
    await sleep(800);
    expect(crossings()).toEqual([50, 80]);
    const read = await clients[0]!.getBudget({ id: budget.id }, team);
    expect(read.thresholds.filter((t) => t.notifiedAt).map((t) => t.percentage)).toEqual([50, 80]);
  });
});

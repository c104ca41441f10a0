import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { budgets } from '@costgov/contracts';
import type { Db } from '@costgov/db';
import { newId } from '@costgov/ids';
import { createRpcClient, type RpcClient } from '@costgov/rpc';
import { startService, type RunningService } from '@costgov/runtime';
import { metrics } from '@costgov/telemetry';
import { eventually, freshDb, testBus } from '@costgov/testing';
import { budgetsModule } from '../src/module';
import { logger } from './fixture';

/**
 * The project read cache (src/projects/detail-cache.ts) on two replicas of one database, each with its
 * own subscription: whatever a write did, and through whichever replica or outside any, the next read
 * through the other replica must show it, while repeated reads are answered from memory.
 */
let db: Db;
let bus: Awaited<ReturnType<typeof testBus>>;
const replicas: RunningService[] = [];
const projectClients: Array<RpcClient<typeof budgets.ProjectsService>> = [];
const budgetClients: Array<RpcClient<typeof budgets.BudgetsService>> = [];
const postgres = Boolean(process.env.DATABASE_URL);

/** The process's count of project reads answered `result` (hit, miss, bypass), from its metrics. */
async function reads(result: string): Promise<number> {
  const metric = await metrics.registry.getSingleMetric('budgets_project_reads_total')?.get();
  return metric?.values.find((v) => v.labels.result === result)?.value ?? 0;
}

beforeAll(async () => {
  bus = await testBus(logger);
  db = await freshDb('budgets');
  const shared: Db = { ...db, close: async () => undefined };
  for (let i = 0; i < 2; i++) {
    const replica = await startService(
      budgetsModule({
        teamUsers: { activeUserIds: async (_team, ids) => new Set(ids) },
        teamConnections: { missingIds: async () => new Set() },
        spendSource: {
          spendOf: async () => ({
            converted: 0,
            unconverted: [],
            lastChargeDay: null,
            usage: 0,
            lastUsageDay: null,
          }),
        },
      }),
      { logger, bus, openDb: async () => shared, dataDir: 'memory', grpcAddress: '127.0.0.1:0' },
    );
    replicas.push(replica);
    projectClients.push(createRpcClient(budgets.ProjectsService, `127.0.0.1:${replica.port}`));
    budgetClients.push(createRpcClient(budgets.BudgetsService, `127.0.0.1:${replica.port}`));
  }
});

afterAll(async () => {
  for (const client of [...projectClients, ...budgetClients]) client.close();
  for (const replica of replicas) await replica.stop();
  await bus?.close();
  await db?.close();
});

/** A read through replica A that the cache answers (a hit), once its subscription is up. */
async function cachedRead(teamId: string, id: string): Promise<budgets.Project> {
  const [a] = projectClients;
  return eventually(async () => {
    const hits = await reads('hit');
    const project = await a!.getProject({ id }, { teamId });
    return (await reads('hit')) > hits ? project : undefined;
  });
}

describe(`the project read cache on two replicas (${postgres ? 'postgres' : 'pglite'})`, () => {
  it('answers repeated reads from memory, and the same answer as the database', async () => {
    const team = { teamId: newId('team') };
    const [a] = projectClients;
    const created = await projectClients[1]!.createProject({ name: 'cached' }, team);
    const first = await cachedRead(team.teamId, created.id);
    const hits = await reads('hit');
    for (let i = 0; i < 20; i++) expect(await a!.getProject({ id: created.id }, team)).toEqual(first);
    expect((await reads('hit')) - hits).toBeGreaterThanOrEqual(20);
  });

  it('shows at once every change made through the other replica', async () => {
    const team = { teamId: newId('team') };
    const [a, b] = projectClients;
    const project = await b!.createProject({ name: 'p-0' }, team);
    await cachedRead(team.teamId, project.id);
    for (let i = 1; i <= 40; i++) {
      await b!.updateProject({ id: project.id, name: `p-${i}` }, team);
      expect((await a!.getProject({ id: project.id }, team)).name).toBe(`p-${i}`);
    }
    const budget = await budgetClients[1]!.createBudget(
      { projectId: project.id, name: 'compute', amount: 100, currency: 'USD', thresholds: [80] },
      team,
    );
    expect((await a!.getProject({ id: project.id }, team)).budgets.map((x) => x.id)).toEqual([budget.id]);
    expect((await a!.getProject({ id: project.id }, team)).budgetCount).toBe(1);
    await budgetClients[1]!.updateBudget({ id: budget.id, amount: 250 }, team);
    expect((await a!.getProject({ id: project.id }, team)).budgets[0]!.amount).toBe(250);
    await budgetClients[1]!.deleteBudget({ id: budget.id }, team);
    expect((await a!.getProject({ id: project.id }, team)).budgets).toEqual([]);
    await b!.deleteProject({ id: project.id }, team);
    await expect(a!.getProject({ id: project.id }, team)).rejects.toMatchObject({ code: 'not_found' });
  });

  it('shows at once changes written outside any RPC (evaluations, event consumers)', async () => {
    const team = { teamId: newId('team') };
    const [a] = projectClients;
    const project = await a!.createProject({ name: 'outside' }, team);
    const budget = await budgetClients[0]!.createBudget(
      { projectId: project.id, name: 'b', amount: 100, currency: 'USD', thresholds: [] },
      team,
    );
    await cachedRead(team.teamId, project.id);
    // Each budget column the read shows, changed in SQL as an evaluation or a consumer would.
    const summary = async () => (await a!.getProject({ id: project.id }, team)).budgets[0]!;
    await db.query(`UPDATE budgets SET name = 'renamed' WHERE id = $1`, [budget.id]);
    expect((await summary()).name).toBe('renamed');
    await db.query(`UPDATE budgets SET currency = 'EUR', period = 'yearly' WHERE id = $1`, [budget.id]);
    expect(await summary()).toMatchObject({ currency: 'EUR', period: 'yearly' });
    await db.query(`UPDATE budgets SET status = 'archived' WHERE id = $1`, [budget.id]);
    expect((await summary()).status).toBe('archived');
    expect((await a!.getProject({ id: project.id }, team)).budgetCount).toBe(0);
    // Bookkeeping columns the read does not show leave the cached answer in place.
    await cachedRead(team.teamId, project.id);
    const hits = await reads('hit');
    await db.query('UPDATE budgets SET needs_evaluation = true, current_spend = 12 WHERE id = $1', [
      budget.id,
    ]);
    await a!.getProject({ id: project.id }, team);
    expect((await reads('hit')) - hits).toBe(1);
    for (let i = 1; i <= 20; i++) {
      await db.query('UPDATE budgets SET percentage_used = $2 WHERE id = $1', [budget.id, i]);
      expect((await a!.getProject({ id: project.id }, team)).budgets[0]!.percentageUsed).toBe(i);
      await db.query('UPDATE projects SET violation_count = $2 WHERE id = $1', [project.id, i]);
      expect((await a!.getProject({ id: project.id }, team)).violationCount).toBe(i);
    }
  });

  it("never answers another team's read of a cached project", async () => {
    const team = { teamId: newId('team') };
    const project = await projectClients[0]!.createProject({ name: 'mine' }, team);
    await cachedRead(team.teamId, project.id);
    await expect(
      projectClients[0]!.getProject({ id: project.id }, { teamId: newId('team') }),
    ).rejects.toMatchObject({ code: 'not_found' });
  });

  it.runIf(postgres)(
    'reads the database while its subscription is gone, and caches again once it is back',
    async () => {
      const team = { teamId: newId('team') };
      const [a] = projectClients;
      const project = await a!.createProject({ name: 'cut' }, team);
      await cachedRead(team.teamId, project.id);
      // This file's two cache subscriptions (libs/db names them after schema and first channel).
      const { rows } = await db.query<{ n: number }>(
        `SELECT count(pg_terminate_backend(pid))::int AS n FROM pg_stat_activity
         WHERE datname = current_database() AND application_name = 'costgov ' || current_schema() || ' budgets_project_changed'`,
      );
      expect(rows[0]!.n).toBe(2);
      const bypassed = await reads('bypass');
      // Changes made meanwhile notify nobody: they must still be seen, by reads from the database.
      for (let i = 1; i <= 10; i++) {
        await db.query('UPDATE projects SET violation_count = $2 WHERE id = $1', [project.id, i]);
        expect((await a!.getProject({ id: project.id }, team)).violationCount).toBe(i);
      }
      expect(await reads('bypass')).toBeGreaterThan(bypassed);
      const back = await cachedRead(team.teamId, project.id);
      expect(back.violationCount).toBe(10);
    },
  );
});

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { timestampDate } from '@bufbuild/protobuf/wkt';
import { decodeEvent } from '@costgov/bus';
import { events, type budgets } from '@costgov/contracts';
import { newId } from '@costgov/ids';
import { metrics } from '@costgov/telemetry';
import { eventually } from '@costgov/testing';
import { evaluationMetrics } from '../src/budgets/metrics';
import { sleep, startBudgets, type BudgetsFixture } from './fixture';

let f: BudgetsFixture;

beforeAll(async () => {
  f = await startBudgets();
});
afterAll(() => f?.stop());

/** A team with a project reading one connection, and a budget of 1000 USD a month on it. */
async function budgetOnConnection(options: { thresholds?: number[]; amount?: number } = {}) {
  const team = { teamId: newId('team') };
  const connection = newId('connection');
  const project = await f.projects.createProject({ name: 'shop', connectionIds: [connection] }, team);
  const budget = await f.client.createBudget(
    {
      projectId: project.id,
      name: 'compute',
      amount: options.amount ?? 1000,
      currency: 'USD',
      period: 'monthly',
      thresholds: options.thresholds ?? [50, 80, 100],
    },
    team,
  );
  return { team, connection, project, budget };
}

/** Publishes new cost data for the connection and waits until the budget shows `spend`. */
async function ingestUntil(
  team: { teamId: string },
  connection: string,
  budgetId: string,
  spend: number,
): Promise<budgets.Budget> {
  f.spend.set(connection, spend);
  await f.ingested(team.teamId, connection);
  return eventually(async () => {
    const budget = await f.client.getBudget({ id: budgetId }, team);
    return budget.currentSpend === spend ? budget : undefined;
  });
}

const notified = (budget: budgets.Budget) =>
  budget.thresholds.filter((t) => t.notifiedAt).map((t) => t.percentage);

describe('budget evaluation', () => {
  it('crosses 50, 80 and 100 % once each as cost data arrives, then breaches', async () => {
    const { team, connection, budget } = await budgetOnConnection();
    expect(budget.currentSpend).toBe(0);

    const at60 = await ingestUntil(team, connection, budget.id, 600);
    expect(at60).toMatchObject({ percentageUsed: 60, status: 'active' });
    expect(notified(at60)).toEqual([50]);
    const at85 = await ingestUntil(team, connection, budget.id, 850);
    expect(notified(at85)).toEqual([50, 80]);
    expect(at85.thresholds[0]!.notifiedAt).toEqual(at60.thresholds[0]!.notifiedAt);
    const at100 = await ingestUntil(team, connection, budget.id, 1000);
    expect(at100).toMatchObject({ percentageUsed: 100, status: 'breached' });
    expect(notified(at100)).toEqual([50, 80, 100]);

    await eventually(() =>
      f.eventsOf(budget.id).includes('budgets.budget.breached:100') ? true : undefined,
    );
    await sleep(300);
    expect(f.eventsOf(budget.id)).toEqual([
      'budgets.budget.created',
      'budgets.budget.threshold_crossed:50',
      'budgets.budget.threshold_crossed:80',
      'budgets.budget.threshold_crossed:100',
      'budgets.budget.breached:100',
      'budgets.budget.updated',
    ]);
    const crossing = f.received.find(
      (e) => e.subject === budget.id && e.type === 'budgets.budget.threshold_crossed',
    )!;
    expect(decodeEvent(events.BudgetThresholdCrossedSchema, crossing)).toMatchObject({
      budgetId: budget.id,
      teamId: team.teamId,
      projectId: budget.projectId,
      budgetName: 'compute',
      projectName: 'shop',
      threshold: 50,
      percentageUsed: 60,
      currentSpend: 600,
      amount: 1000,
      currency: 'USD',
      period: 'monthly',
      periodStart: '2026-11-01',
      periodEnd: '2026-12-01',
    });
  });

  it('asks costs for the budget period up to the end of the clock day, tags and currency of the project connections', async () => {
    const team = { teamId: newId('team') };
    const connections = [newId('connection'), newId('connection')];
    const project = await f.projects.createProject({ name: 'q', connectionIds: connections }, team);
    f.queries.length = 0;
    await f.client.createBudget(
      {
        projectId: project.id,
        name: 'q',
        amount: 10,
        currency: 'EUR',
        period: 'quarterly',
        tags: { env: 'prod' },
      },
      team,
    );
    const asked = {
      teamId: team.teamId,
      connectionIds: connections,
      from: new Date('2026-10-01T00:00:00Z'),
      // The quarter runs to 1 January; charges dated after the clock's day (10 November) are not counted yet.
      to: new Date(Date.parse(`${f.clock.now.toISOString().slice(0, 10)}T00:00:00Z`) + 86_400_000),
      tags: { env: 'prod' },
      currency: 'EUR',
    };
    // The creation's evaluation; the sweep the new project scheduled (sweepSoon) may evaluate the budget
    // once more meanwhile, asking the same (on Postgres, 1 run in 3).
    expect(f.queries.length).toBeGreaterThanOrEqual(1);
    for (const query of f.queries) expect(query).toEqual(asked);
  });

  it('evaluates a new budget at once: several thresholds crossed give one event each', async () => {
    const team = { teamId: newId('team') };
    const connection = newId('connection');
    f.spend.set(connection, 2400);
    const project = await f.projects.createProject({ name: 'hot', connectionIds: [connection] }, team);
    const budget = await f.client.createBudget(
      { projectId: project.id, name: 'hot', amount: 1000, currency: 'USD', thresholds: [100, 50, 200] },
      team,
    );
    expect(budget).toMatchObject({ status: 'breached', currentSpend: 2400, percentageUsed: 240 });
    expect(notified(budget)).toEqual([50, 100, 200]);
    await eventually(() => (f.eventsOf(budget.id).length >= 5 ? true : undefined));
    await sleep(300);
    expect(f.eventsOf(budget.id)).toEqual([
      'budgets.budget.created',
      'budgets.budget.threshold_crossed:50',
      'budgets.budget.threshold_crossed:100',
      'budgets.budget.threshold_crossed:200',
      'budgets.budget.breached:100',
      'budgets.budget.updated',
    ]);
  });

  it('changes nothing on a redelivered event or an evaluation with the same spend', async () => {
    const { team, connection, budget } = await budgetOnConnection();
    const evaluated = await ingestUntil(team, connection, budget.id, 900);
    await eventually(() => (f.eventsOf(budget.id).length >= 3 ? true : undefined));
    const event = await f.ingested(team.teamId, connection);
    await f.bus.publish({ ...event }, { dedupeId: `${event.id}-again` });
    await eventually(async () => {
      const { rows } = await f.db.query<{ n: number }>(
        'SELECT count(*)::int AS n FROM inbox WHERE event_id = $1',
        [event.id],
      );
      return rows[0]!.n === 1 ? true : undefined;
    });
    await sleep(400);
    const after = await f.client.getBudget({ id: budget.id }, team);
    expect(after.thresholds).toEqual(evaluated.thresholds);
    expect(after).toMatchObject({ status: 'active', currentSpend: 900, percentageUsed: 90 });
    expect(f.eventsOf(budget.id)).toEqual([
      'budgets.budget.created',
      'budgets.budget.threshold_crossed:50',
      'budgets.budget.threshold_crossed:80',
    ]);
  });

  it('starts a new period clean when the clock passes the boundary', async () => {
    const { team, connection, budget } = await budgetOnConnection();
    const breached = await ingestUntil(team, connection, budget.id, 1500);
    expect(breached.status).toBe('breached');
    await eventually(() => (f.eventsOf(budget.id).length >= 5 ? true : undefined));
    const before = f.eventsOf(budget.id).length;

    const november = f.clock.now;
    f.spend.set(connection, 100);
    f.clock.now = new Date('2026-12-01T00:00:05Z');
    try {
      const december = await eventually(async () => {
        const read = await f.client.getBudget({ id: budget.id }, team);
        return timestampDate(read.periodStart!).toISOString() === '2026-12-01T00:00:00.000Z'
          ? read
          : undefined;
      });
      expect(december).toMatchObject({ status: 'active', currentSpend: 100, percentageUsed: 10 });
      expect(timestampDate(december.periodEnd!).toISOString()).toBe('2027-01-01T00:00:00.000Z');
      expect(notified(december)).toEqual([]);
      await sleep(300);
      // Only the status change back to active: no threshold is crossed at 10 %.
      expect(f.eventsOf(budget.id).slice(before)).toEqual(['budgets.budget.updated']);

      const again = await ingestUntil(team, connection, budget.id, 550);
      expect(notified(again)).toEqual([50]);
      await eventually(() =>
        f.eventsOf(budget.id).slice(before).includes('budgets.budget.threshold_crossed:50')
          ? true
          : undefined,
      );
      const crossing = f.received.filter(
        (e) => e.subject === budget.id && e.type === 'budgets.budget.threshold_crossed',
      );
      expect(decodeEvent(events.BudgetThresholdCrossedSchema, crossing.at(-1)!)).toMatchObject({
        threshold: 50,
        periodStart: '2026-12-01',
        periodEnd: '2027-01-01',
      });
    } finally {
      f.clock.now = november;
    }
  });

  it('does not evaluate an archived budget, and evaluates it again when restored', async () => {
    const { team, connection, project, budget } = await budgetOnConnection();
    const witness = await f.client.createBudget(
      { projectId: project.id, name: 'witness', amount: 1000, currency: 'USD' },
      team,
    );
    await f.client.updateBudget({ id: budget.id, status: 'archived' }, team);
    await ingestUntil(team, connection, witness.id, 700);
    const archived = await f.client.getBudget({ id: budget.id }, team);
    expect(archived).toMatchObject({ status: 'archived', currentSpend: 0 });
    expect(notified(archived)).toEqual([]);

    const restored = await f.client.updateBudget({ id: budget.id, status: 'active' }, team);
    expect(restored).toMatchObject({ status: 'active', currentSpend: 700 });
    expect(notified(restored)).toEqual([50]);
  });

  it('turns a breached budget active when the amount is raised above spend', async () => {
    const { team, connection, budget } = await budgetOnConnection();
    await ingestUntil(team, connection, budget.id, 1200);
    const raised = await f.client.updateBudget({ id: budget.id, amount: 2000 }, team);
    expect(raised).toMatchObject({ status: 'active', percentageUsed: 60 });
    // Thresholds crossed in this period stay notified.
    expect(notified(raised)).toEqual([50, 80, 100]);
  });

  it('answers reads with the last evaluated spend while costs is down, and catches up when it is back', async () => {
    const { team, connection, budget } = await budgetOnConnection();
    await ingestUntil(team, connection, budget.id, 300);
    const deferred = async () =>
      (await evaluationMetrics.evaluations.get()).values.find((v) => v.labels.outcome === 'deferred')
        ?.value ?? 0;
    const deferredBefore = await deferred();
    f.costs.down = true;
    try {
      f.spend.set(connection, 650);
      const event = await f.ingested(team.teamId, connection);
      await eventually(async () => {
        const { rows } = await f.db.query('SELECT 1 FROM inbox WHERE event_id = $1', [event.id]);
        return rows.length ? true : undefined;
      });
      await expect(f.client.getBudget({ id: budget.id }, team)).resolves.toMatchObject({ currentSpend: 300 });
      // A change while costs is down is stored, with the spend as last evaluated.
      await expect(f.client.updateBudget({ id: budget.id, amount: 600 }, team)).resolves.toMatchObject({
        amount: 600,
        currentSpend: 300,
        percentageUsed: 50,
      });
      expect(await deferred()).toBeGreaterThan(deferredBefore);
    } finally {
      f.costs.down = false;
    }
    const caughtUp = await eventually(async () => {
      const read = await f.client.getBudget({ id: budget.id }, team);
      return read.currentSpend === 650 ? read : undefined;
    });
    expect(caughtUp.status).toBe('breached');
  });

  it('re-evaluates the budgets of a project whose connections change', async () => {
    const { team, project, budget } = await budgetOnConnection();
    const added = newId('connection');
    f.spend.set(added, 420);
    await f.projects.updateProject(
      { id: project.id, connectionIds: { values: [...project.connectionIds, added] } },
      team,
    );
    await eventually(async () => {
      const read = await f.client.getBudget({ id: budget.id }, team);
      return read.currentSpend === 420 ? read : undefined;
    });
    const read = await f.projects.getProject({ id: project.id }, team);
    expect(read.budgets[0]).toMatchObject({ id: budget.id, percentageUsed: 42 });
  });

  it('reports spend it could not convert, and forecasts from the last charge day', async () => {
    const { team, connection, budget } = await budgetOnConnection();
    f.unconverted.set(connection, [{ currency: 'CHF', amount: 12.5 }]);
    f.lastChargeDay.value = '2026-11-05'; // 5 of 30 days covered
    try {
      const read = await ingestUntil(team, connection, budget.id, 100);
      expect(read.unconvertedSpend).toEqual([expect.objectContaining({ currency: 'CHF', amount: 12.5 })]);
      expect(read.forecastSpend).toBe(600);
      const counted = await metrics.registry.getSingleMetricAsString('budget_unconverted_spend_total');
      expect(counted).toMatch(
        /budget_unconverted_spend_total\{from_currency="CHF",to_currency="USD"\} [1-9]/,
      );
    } finally {
      f.unconverted.delete(connection);
      f.lastChargeDay.value = null;
    }
    // Without a charge day, up to now: 9.5 of 30 days at the fixture's clock (10 November, noon).
    const now = await ingestUntil(team, connection, budget.id, 95);
    expect(now.forecastSpend).toBe(300);
    expect(now.dataThrough).toBeUndefined();
  });

  it('lists the current period of each budget reading a connection, leaving out archived ones', async () => {
    const { team, connection, project, budget } = await budgetOnConnection();
    const quarterly = await f.client.createBudget(
      { projectId: project.id, name: 'q', amount: 10, currency: 'USD', period: 'quarterly' },
      team,
    );
    const archived = await f.client.createBudget(
      { projectId: project.id, name: 'old', amount: 10, currency: 'USD', period: 'yearly' },
      team,
    );
    await f.client.updateBudget({ id: archived.id, status: 'archived' }, team);
    const other = newId('connection');
    await f.projects.createProject({ name: 'elsewhere', connectionIds: [other] }, team);
    const { periods } = await f.client.listConnectionBudgetPeriods({ connectionId: connection }, team);
    // The fixture's clock is 10 November 2026: its month and its quarter.
    expect(
      periods.map((p) => [p.budgetId, p.period, timestampDate(p.periodStart!), timestampDate(p.periodEnd!)]),
    ).toEqual(
      [
        [budget.id, 'monthly', new Date('2026-11-01T00:00:00Z'), new Date('2026-12-01T00:00:00Z')],
        [quarterly.id, 'quarterly', new Date('2026-10-01T00:00:00Z'), new Date('2027-01-01T00:00:00Z')],
      ].sort((a, b) => String(a[0]).localeCompare(String(b[0]))),
    );
    // Another team sees none of them.
    const stranger = { teamId: newId('team') };
    expect(
      (await f.client.listConnectionBudgetPeriods({ connectionId: connection }, stranger)).periods,
    ).toEqual([]);
  });

  it('counts fees and purchases once in the forecast and shows how far the data reaches', async () => {
    const { team, connection, budget } = await budgetOnConnection();
    f.lastChargeDay.value = '2026-11-08'; // 8 of 30 days
    f.fixedSpend.set(connection, 300); // a monthly fee booked on the 1st
    try {
      const read = await ingestUntil(team, connection, budget.id, 300 + 8 * 20);
      expect(read.forecastSpend).toBe(20 * 30 + 300);
      expect(timestampDate(read.dataThrough!)).toEqual(new Date('2026-11-09T00:00:00Z'));
    } finally {
      f.fixedSpend.delete(connection);
      f.lastChargeDay.value = null;
    }
  });

  it('evaluates every budget again on a new UTC day, so charges dated that day count', async () => {
    const { team, connection, budget } = await budgetOnConnection();
    await ingestUntil(team, connection, budget.id, 10);
    const asked = f.queries.length;
    const before = f.clock.now;
    f.clock.now = new Date(before.getTime() + 86_400_000);
    try {
      const query = await eventually(async () =>
        f.queries.slice(asked).find((q) => q.connectionIds.includes(connection)),
      );
      expect(query.to).toEqual(new Date('2026-11-12T00:00:00Z'));
    } finally {
      f.clock.now = before;
    }
  });
});

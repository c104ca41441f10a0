import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { severityOf } from '../src/violations/openings';
import {
  budgetsEvent,
  deliver,
  newBudget,
  processed,
  startViolations,
  violationEvents,
  violationsOf,
  type Fixture,
} from './fixture';

let fixture: Fixture;

beforeAll(async () => {
  fixture = await startViolations();
});

afterAll(() => fixture?.stop());

const crossed = 'budgets.budget.threshold_crossed' as const;
const breached = 'budgets.budget.breached' as const;

describe('severity by the crossed threshold', () => {
  it.each([
    [1, 'info'],
    [50, 'info'],
    [79.99, 'info'],
    [80, 'warning'],
    [99.99, 'warning'],
    [100, 'critical'],
    [150, 'critical'],
    [1000, 'critical'],
  ])('%s %% is %s', (threshold, severity) => {
    expect(severityOf(threshold)).toBe(severity);
  });
});

describe('violations from budgets.budget.threshold_crossed', () => {
  it('opens one violation per threshold with its severity, values, message and created event', async () => {
    const ref = newBudget();
    await deliver(
      fixture,
      budgetsEvent(crossed, { ...ref, threshold: 50, currentSpend: 512.5, amount: 1000 }),
      budgetsEvent(crossed, { ...ref, threshold: 80, currentSpend: 850, amount: 1000 }),
      budgetsEvent(crossed, { ...ref, threshold: 100, currentSpend: 1234.56, amount: 1000 }),
    );
    const rows = await violationsOf(fixture, ref.budgetId);
    expect(rows.map((r) => [r.threshold_percentage, r.severity, r.status])).toEqual([
      [50, 'info', 'open'],
      [80, 'warning', 'open'],
      [100, 'critical', 'open'],
    ]);
    expect(rows.map((r) => [r.current_value, r.threshold_value])).toEqual([
      [512.5, 500],
      [850, 800],
      [1234.56, 1000],
    ]);
    expect(rows[1]!.message).toBe(
      "Budget 'Cloud spend' of project 'checkout' crossed its 80 % threshold (800.00 USD) in the monthly " +
        'period 2026-11-01 to 2026-11-30: 850.00 USD spent of 1,000.00 USD (85 %). ' +
        "Review the project's spend, or raise the budget if the spend is expected.",
    );

    const written = await violationEvents(fixture, { budgetId: ref.budgetId });
    expect(written.map((e) => [e.type, e.data.severity, e.data.status, e.data.previousStatus])).toEqual([
      ['violations.violation.created', 'info', 'open', ''],
      ['violations.violation.created', 'warning', 'open', ''],
      ['violations.violation.created', 'critical', 'open', ''],
    ]);
    expect(written[0]!.data).toMatchObject({
      violationId: rows[0]!.id,
      teamId: ref.teamId,
      projectId: ref.projectId,
      budgetId: ref.budgetId,
    });
  });

  it('opens each once when an event is delivered twice or the crossing is reported again', async () => {
    const ref = newBudget();
    const first = budgetsEvent(crossed, { ...ref, threshold: 80 });
    await deliver(fixture, first);
    // The same event again (a redelivery past the bus's dedupe), and a new event for the same crossing.
    await fixture.bus.publish({ ...first }, { dedupeId: `${first.id}-again` });
    const again = budgetsEvent(crossed, { ...ref, threshold: 80, currentSpend: 900 });
    // One durable handles a budget's events in order: once `again` is processed, the redelivery was too.
    await deliver(fixture, again);
    const rows = await violationsOf(fixture, ref.budgetId);
    expect(rows).toHaveLength(1);
    expect(rows[0]!.current_value).toBe(801); // the first report's spend
    expect(await violationEvents(fixture, { budgetId: ref.budgetId })).toHaveLength(1);
  });

  it('opens a new violation for the same threshold in the next period', async () => {
    const ref = newBudget();
    await deliver(
      fixture,
      budgetsEvent(crossed, { ...ref, threshold: 80 }),
      budgetsEvent(crossed, { ...ref, threshold: 80, periodStart: '2026-12-01', periodEnd: '2027-01-01' }),
    );
    expect(await violationsOf(fixture, ref.budgetId)).toHaveLength(2);
  });

  it('budget.breached does not duplicate the 100 % threshold, in either order', async () => {
    for (const order of [
      [crossed, breached],
      [breached, crossed],
    ] as const) {
      const ref = newBudget();
      await deliver(fixture, ...order.map((type) => budgetsEvent(type, { ...ref, threshold: 100 })));
      const rows = await violationsOf(fixture, ref.budgetId);
      expect(rows.map((r) => [r.threshold_percentage, r.severity])).toEqual([[100, 'critical']]);
      expect(await violationEvents(fixture, { budgetId: ref.budgetId })).toHaveLength(1);
    }
  });

  it('budget.breached opens the critical violation of a budget without a 100 % threshold', async () => {
    const ref = newBudget();
    await deliver(
      fixture,
      budgetsEvent(crossed, { ...ref, threshold: 80 }),
      budgetsEvent(breached, { ...ref, threshold: 100, currentSpend: 1100 }),
    );
    const rows = await violationsOf(fixture, ref.budgetId);
    expect(rows.map((r) => [r.threshold_percentage, r.severity, r.threshold_value])).toEqual([
      [80, 'warning', 800],
      [100, 'critical', 1000],
    ]);
  });

  it('passes over a payload that cannot open a violation, without retrying it', async () => {
    const ref = newBudget();
    const broken = budgetsEvent(crossed, { ...ref, threshold: 80, periodStart: 'November' });
    await deliver(fixture, broken);
    expect(await violationsOf(fixture, ref.budgetId)).toEqual([]);
  });

  it('opens nothing for a budget already deleted', async () => {
    const ref = newBudget();
    await fixture.db.query(
      `INSERT INTO budget_purges (budget_id, team_id, event_id, violations_removed) VALUES ($1, $2, 'evt_x', 0)`,
      [ref.budgetId, ref.teamId],
    );
    const late = budgetsEvent(crossed, { ...ref, threshold: 80 });
    await fixture.bus.publish(late);
    await processed(fixture, late);
    expect(await violationsOf(fixture, ref.budgetId)).toEqual([]);
  });
});

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newId } from '@costgov/ids';
import {
  budgetDeletedEvent,
  budgetsEvent,
  deliver,
  newBudget,
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

describe('purge on budgets.budget.deleted', () => {
  it("removes only the deleted budget's violations, reports each, once, even when the event arrives twice", async () => {
    const teamId = newId('team');
    const projectId = newId('project');
    const doomed = newBudget(teamId, projectId);
    const kept = newBudget(teamId, projectId);
    await deliver(
      fixture,
      ...[50, 80, 100].map((threshold) => budgetsEvent(crossed, { ...doomed, threshold })),
      budgetsEvent(crossed, { ...kept, threshold: 80 }),
    );
    const [info, warning] = await violationsOf(fixture, doomed.budgetId);
    const ctx = { teamId, actor: newId('apiKey') };
    await fixture.client.acknowledgeViolation({ id: warning!.id }, ctx);
    await fixture.client.resolveViolation({ id: info!.id }, ctx);

    const deleted = budgetDeletedEvent(doomed);
    await deliver(fixture, deleted);
    expect(await violationsOf(fixture, doomed.budgetId)).toEqual([]);
    expect(await violationsOf(fixture, kept.budgetId)).toHaveLength(1);
    const { rows: purges } = await fixture.db.query('SELECT * FROM budget_purges WHERE budget_id = $1', [
      doomed.budgetId,
    ]);
    expect(purges).toMatchObject([{ team_id: teamId, event_id: deleted.id, violations_removed: 3 }]);
    const removals = (await violationEvents(fixture, { budgetId: doomed.budgetId }))
      .filter((e) => e.type === 'violations.violation.deleted')
      .map((e) => [e.data.status, e.data.previousStatus])
      .sort();
    expect(removals).toEqual([
      ['deleted', 'acknowledged'],
      ['deleted', 'open'],
      ['deleted', 'resolved'],
    ]);

    // A redelivery changes nothing, and a late crossing of the deleted budget opens nothing.
    await fixture.bus.publish({ ...deleted }, { dedupeId: `${deleted.id}-again` });
    await deliver(fixture, budgetsEvent(crossed, { ...doomed, threshold: 120 }));
    expect(await violationsOf(fixture, doomed.budgetId)).toEqual([]);
    expect(
      (await fixture.db.query('SELECT * FROM budget_purges WHERE budget_id = $1', [doomed.budgetId])).rows,
    ).toHaveLength(1);
    expect(
      (await violationEvents(fixture, { budgetId: doomed.budgetId })).filter(
        (e) => e.type === 'violations.violation.deleted',
      ),
    ).toHaveLength(3);
  });

  it("leaves another team's budget of the same id untouched", async () => {
    const ours = newBudget();
    await deliver(fixture, budgetsEvent(crossed, { ...ours, threshold: 80 }));
    // A deletion claiming the budget for another team deletes nothing of ours.
    await deliver(fixture, budgetDeletedEvent({ ...ours, teamId: newId('team') }));
    expect(await violationsOf(fixture, ours.budgetId)).toHaveLength(1);
  });
});

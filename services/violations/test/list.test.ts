import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BadRequestError, NotFoundError } from '@costgov/errors';
import { newId } from '@costgov/ids';
import { budgetsEvent, deliver, newBudget, startViolations, type Fixture } from './fixture';

let fixture: Fixture;
const teamId = newId('team');
const ctx = { teamId, actor: newId('apiKey') };
const projectA = newId('project');
const projectB = newId('project');
const budgetA = newBudget(teamId, projectA);
const budgetB = newBudget(teamId, projectB);

interface Seeded {
  id: string;
  projectId: string;
  budgetId: string;
  severity: string;
  status: string;
  currentValue: number;
  thresholdValue: number;
}

/** Eight violations over two projects with every severity and status, plus one of another team. */
let seeded: Seeded[];
let otherTeamViolation: string;
const otherTeam = newBudget();

beforeAll(async () => {
  fixture = await startViolations();
  const crossed = 'budgets.budget.threshold_crossed' as const;
  const spends = [10, 70, 30, 90, 50, 20, 80, 60];
  const plan = [
    { budget: budgetA, threshold: 50 },
    { budget: budgetA, threshold: 80 },
    { budget: budgetA, threshold: 100 },
    { budget: budgetA, threshold: 120 },
    { budget: budgetB, threshold: 25 },
    { budget: budgetB, threshold: 90 },
    { budget: budgetB, threshold: 100 },
    { budget: budgetB, threshold: 75 },
  ];
  // One at a time, so created_at follows the plan's order.
  for (const [i, { budget, threshold }] of plan.entries()) {
    await deliver(fixture, budgetsEvent(crossed, { ...budget, threshold, currentSpend: spends[i]! * 10 }));
  }
  await deliver(fixture, budgetsEvent(crossed, { ...otherTeam, threshold: 80 }));
  otherTeamViolation = (await fixture.client.listViolations({}, { teamId: otherTeam.teamId })).violations[0]!
    .id;

  const all = (await fixture.client.listViolations({ sort: { field: 'created_at' } }, ctx)).violations;
  expect(all).toHaveLength(8);
  // Statuses: a few acknowledged, a few resolved, the rest open.
  await fixture.client.acknowledgeViolation({ id: all[1]!.id, actor: ctx.actor }, ctx);
  await fixture.client.acknowledgeViolation({ id: all[5]!.id, actor: ctx.actor }, ctx);
  await fixture.client.resolveViolation({ id: all[2]!.id, actor: ctx.actor }, ctx);
  await fixture.client.resolveViolation({ id: all[6]!.id, actor: ctx.actor }, ctx);
  seeded = (await fixture.client.listViolations({ sort: { field: 'created_at' } }, ctx)).violations.map(
    (v) => ({
      id: v.id,
      projectId: v.projectId,
      budgetId: v.budgetId,
      severity: v.severity,
      status: v.status,
      currentValue: v.currentValue,
      thresholdValue: v.thresholdValue,
    }),
  );
});

afterAll(() => fixture?.stop());

const ids = (list: { id: string }[]) => list.map((v) => v.id);
const list = async (request: Parameters<Fixture['client']['listViolations']>[0]) =>
  fixture.client.listViolations(request, ctx);

describe('listing violations', () => {
  it("lists the team's violations newest first by default, never another team's", async () => {
    const result = await list({});
    expect(ids(result.violations)).toEqual(ids(seeded).reverse());
    expect(ids(result.violations)).not.toContain(otherTeamViolation);
    expect(result.meta).toEqual(
      expect.objectContaining({ currentPage: 1, perPage: 25, totalPages: 1, totalCount: 8 }),
    );
  });

  it.each([
    ['project_id', { projectId: projectA }, (v: Seeded) => v.projectId === projectA],
    ['budget_id', { budgetId: budgetB.budgetId }, (v: Seeded) => v.budgetId === budgetB.budgetId],
    ['severity info', { severity: 'info' }, (v: Seeded) => v.severity === 'info'],
    ['severity warning', { severity: 'warning' }, (v: Seeded) => v.severity === 'warning'],
    ['severity critical', { severity: 'critical' }, (v: Seeded) => v.severity === 'critical'],
    ['status open', { status: 'open' }, (v: Seeded) => v.status === 'open'],
    ['status acknowledged', { status: 'acknowledged' }, (v: Seeded) => v.status === 'acknowledged'],
    ['status resolved', { status: 'resolved' }, (v: Seeded) => v.status === 'resolved'],
    [
      'project_id and severity',
      { projectId: projectB, severity: 'critical' },
      (v: Seeded) => v.projectId === projectB && v.severity === 'critical',
    ],
    ['an unknown project', { projectId: newId('project') }, () => false],
  ])('filters by %s', async (_case, filter, keep) => {
    const expected = seeded.filter(keep);
    const result = await list({ ...filter, sort: { field: 'created_at' } });
    expect(ids(result.violations)).toEqual(ids(expected));
    expect(result.meta?.totalCount).toBe(expected.length);
  });

  it("matches a filter with another team's project or budget id to nothing", async () => {
    for (const filter of [{ projectId: otherTeam.projectId }, { budgetId: otherTeam.budgetId }]) {
      const result = await list(filter);
      expect(result.violations).toEqual([]);
      expect(result.meta?.totalCount).toBe(0);
    }
  });

  const rank = { info: 1, warning: 2, critical: 3, open: 1, acknowledged: 2, resolved: 3 } as const;
  const orders: Array<[string, (v: Seeded) => number]> = [
    ['created_at', (v) => seeded.indexOf(v)],
    ['severity', (v) => rank[v.severity as 'info']],
    ['status', (v) => rank[v.status as 'open']],
    ['current_value', (v) => v.currentValue],
    ['threshold_value', (v) => v.thresholdValue],
  ];
  describe.each(orders)('sort by %s', (field, key) => {
    // Ties are broken by id in the sort's direction; ids grow with creation.
    const sorted = (descending: boolean) =>
      [...seeded].sort((a, b) => {
        const byKey = key(a) - key(b) || (a.id < b.id ? -1 : 1);
        return descending ? -byKey : byKey;
      });
    it.each([false, true])('descending %s', async (descending) => {
      const result = await list({ sort: { field, descending } });
      expect(ids(result.violations)).toEqual(ids(sorted(descending)));
    });
  });

  it('refuses an unknown sort field with 400 naming sort', async () => {
    const error = await list({ sort: { field: 'message', descending: false } }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(BadRequestError);
    expect((error as BadRequestError).details).toEqual([
      { field: 'sort', message: expect.stringContaining('created_at') },
    ]);
  });

  it.each([
    ['severity', { severity: 'high' }],
    ['status', { status: 'closed' }],
    ['project_id', { projectId: 'a\u0000b' }],
  ])('refuses an unknown %s filter value with 400', async (field, filter) => {
    const error = await list(filter).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(BadRequestError);
    expect((error as BadRequestError).details.map((d) => d.field)).toEqual([field]);
  });

  describe('pagination', () => {
    it('pages through in order with the meta arithmetic', async () => {
      const pages = [];
      for (let page = 1; page <= 4; page++) {
        const result = await list({ sort: { field: 'created_at' }, page: { page, perPage: 3 } });
        expect(result.meta).toEqual(
          expect.objectContaining({ currentPage: page, perPage: 3, totalPages: 3, totalCount: 8 }),
        );
        pages.push(ids(result.violations));
      }
      expect(pages.map((p) => p.length)).toEqual([3, 3, 2, 0]);
      expect(pages.flat()).toEqual(ids(seeded));
    });

    it.each([
      [1, 100],
      [1, 1],
    ])('accepts page %s with per_page %s', async (page, perPage) => {
      const result = await list({ page: { page, perPage } });
      expect(result.violations).toHaveLength(Math.min(perPage, 8));
      expect(result.meta?.totalPages).toBe(Math.ceil(8 / perPage));
    });

    it.each([
      ['per_page 101', { page: 1, perPage: 101 }, 'per_page'],
      ['per_page -1', { page: 1, perPage: -1 }, 'per_page'],
      ['page -1', { page: -1, perPage: 10 }, 'page'],
    ])('refuses %s with 400', async (_case, page, field) => {
      const error = await list({ page }).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(BadRequestError);
      expect((error as BadRequestError).details.map((d) => d.field)).toEqual([field]);
    });
  });
});

describe('reading a violation', () => {
  it('reads one of the team with every field', async () => {
    const id = seeded[1]!.id;
    const violation = await fixture.client.getViolation({ id }, ctx);
    expect(violation).toMatchObject({
      id,
      projectId: projectA,
      budgetId: budgetA.budgetId,
      type: 'budget_threshold_breach',
      severity: 'warning',
      status: 'acknowledged',
      currentValue: 700,
      thresholdValue: 800,
      thresholdPercentage: 80,
      currency: 'USD',
      periodStart: '2026-11-01',
      acknowledgedBy: ctx.actor,
    });
    expect(violation.message).toContain("Budget 'Cloud spend'");
  });

  it.each([
    ["another team's id", () => otherTeamViolation],
    ['an unknown id', () => newId('violation')],
    ['a malformed id', () => 'vio_nope'],
  ])('answers 404 to %s', async (_case, id) => {
    await expect(fixture.client.getViolation({ id: id() }, ctx)).rejects.toBeInstanceOf(NotFoundError);
  });
});

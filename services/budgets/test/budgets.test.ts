import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { timestampDate, timestampFromDate } from '@bufbuild/protobuf/wkt';
import { decodeEvent } from '@costgov/bus';
import { budgets, events } from '@costgov/contracts';
import { BadRequestError, ConflictError, NotFoundError, ValidationError } from '@costgov/errors';
import { newId } from '@costgov/ids';
import { eventually } from '@costgov/testing';
import { sleep, startBudgets, type BudgetsFixture } from './fixture';

let f: BudgetsFixture;
const teamA = { teamId: newId('team') };
const teamB = { teamId: newId('team') };

beforeAll(async () => {
  f = await startBudgets();
});
afterAll(() => f?.stop());

const projectOf = async (team: { teamId: string }, connectionIds: string[] = []) =>
  f.projects.createProject({ name: `p-${newId('project').slice(-10)}`, connectionIds }, team);

interface CreateFields {
  projectId: string;
  name: string;
  amount: number;
  currency: string;
  period: string;
  thresholds: number[];
  tags: Record<string, string>;
}

const valid = (projectId: string, extra: Partial<CreateFields> = {}): CreateFields => ({
  projectId,
  name: `b-${newId('budget').slice(-10)}`,
  amount: 1000,
  currency: 'USD',
  period: 'monthly',
  thresholds: [50, 80, 100],
  tags: {},
  ...extra,
});

const rejection = (promise: Promise<unknown>) =>
  promise.then(
    () => undefined,
    (error: unknown) => error,
  );

describe(`budgets service (${process.env.DATABASE_URL ? 'postgres' : 'pglite'}, ${process.env.NATS_URL ? 'nats' : 'in-process bus'})`, () => {
  describe('create', () => {
    it('stores the budget with sorted thresholds, its period and tags, and publishes budgets.budget.created once', async () => {
      const project = await projectOf(teamA);
      const budget = await f.client.createBudget(
        valid(project.id, {
          name: 'Compute',
          thresholds: [100, 50, 75.5],
          tags: { env: 'prod' },
          currency: 'EUR',
        }),
        teamA,
      );
      expect(budget.id).toMatch(/^bdg_/);
      expect(budget).toMatchObject({
        projectId: project.id,
        name: 'Compute',
        amount: 1000,
        currency: 'EUR',
        period: 'monthly',
        status: 'active',
        currentSpend: 0,
        percentageUsed: 0,
        forecastSpend: 0,
        tags: { env: 'prod' },
      });
      expect(budget.thresholds.map((t) => [t.percentage, t.notifiedAt])).toEqual([
        [50, undefined],
        [75.5, undefined],
        [100, undefined],
      ]);
      expect(timestampDate(budget.periodStart!).toISOString()).toBe('2026-11-01T00:00:00.000Z');
      expect(timestampDate(budget.periodEnd!).toISOString()).toBe('2026-12-01T00:00:00.000Z');
      expect(budget.evaluatedAt).toBeDefined();
      await eventually(() => (f.eventsOf(budget.id).length ? true : undefined));
      await sleep(300);
      expect(f.eventsOf(budget.id)).toEqual(['budgets.budget.created']);
      const event = f.received.find((e) => e.subject === budget.id)!;
      expect(decodeEvent(events.BudgetChangedSchema, event)).toMatchObject({
        budgetId: budget.id,
        teamId: teamA.teamId,
        projectId: project.id,
        name: 'Compute',
        amount: 1000,
        currency: 'EUR',
        period: 'monthly',
        status: 'active',
      });
    });

    it('defaults the period to monthly and the thresholds to 50, 80 and 100', async () => {
      const project = await projectOf(teamA);
      const budget = await f.client.createBudget(
        { projectId: project.id, name: 'defaults', amount: 5, currency: 'JPY' },
        teamA,
      );
      expect(budget.period).toBe('monthly');
      expect(budget.thresholds.map((t) => t.percentage)).toEqual([50, 80, 100]);
    });

    it.each([
      ['a blank name', { name: '  ' }, ['name']],
      ['a name of 201 characters', { name: 'x'.repeat(201) }, ['name']],
      ['a zero amount', { amount: 0 }, ['amount']],
      ['a negative amount', { amount: -5 }, ['amount']],
      ['an amount that is not a number', { amount: Number.NaN }, ['amount']],
      ['an infinite amount', { amount: Number.POSITIVE_INFINITY }, ['amount']],
      ['a lower-case currency', { currency: 'usd' }, ['currency']],
      ['an unknown currency', { currency: 'XYZ' }, ['currency']],
      ['a blank currency', { currency: '' }, ['currency']],
      ['an unknown period', { period: 'weekly' }, ['period']],
      ['a threshold of 0', { thresholds: [0, 50] }, ['thresholds[0]']],
      ['a threshold over 1000', { thresholds: [50, 1000.5] }, ['thresholds[1]']],
      ['a negative threshold', { thresholds: [-1] }, ['thresholds[0]']],
      ['a repeated threshold', { thresholds: [80, 50, 80] }, ['thresholds']],
      ['11 thresholds', { thresholds: Array.from({ length: 11 }, (_, i) => (i + 1) * 10) }, ['thresholds']],
      ['a blank tag key', { tags: { ' ': 'x' } }, ['tags']],
      ['a tag value of 257 characters', { tags: { env: 'x'.repeat(257) } }, ['tags.env']],
      [
        '51 tags',
        { tags: Object.fromEntries(Array.from({ length: 51 }, (_, i) => [`k${i}`, 'v'])) },
        ['tags'],
      ],
      ['no project', { projectId: '' }, ['project_id']],
      [
        'every field wrong at once',
        { name: '', amount: 0, currency: 'usd', period: 'daily', thresholds: [0] },
        ['name', 'amount', 'currency', 'period', 'thresholds[0]'],
      ],
    ])('refuses %s with 422 naming each field, and stores nothing', async (_case, change, fields) => {
      const team = { teamId: newId('team') };
      const project = await projectOf(team);
      const error = await rejection(f.client.createBudget(valid(project.id, change), team));
      expect(error).toBeInstanceOf(ValidationError);
      expect((error as ValidationError).details.map((d) => d.field)).toEqual(fields);
      expect((await f.client.listBudgets({}, team)).budgets).toEqual([]);
    });

    it('accepts the limits: thresholds of 1000 and just above 0, 10 of them, any ISO 4217 code', async () => {
      const project = await projectOf(teamA);
      const thresholds = [0.01, ...Array.from({ length: 8 }, (_, i) => (i + 1) * 100), 1000];
      const budget = await f.client.createBudget(valid(project.id, { thresholds, currency: 'CHF' }), teamA);
      expect(budget.thresholds.map((t) => t.percentage)).toEqual(thresholds);
    });

    it('answers 404 for a project of another team, an unknown or a malformed project id', async () => {
      const theirs = await projectOf(teamB);
      for (const projectId of [theirs.id, newId('project'), 'prj_nope']) {
        expect(await rejection(f.client.createBudget(valid(projectId), teamA))).toBeInstanceOf(NotFoundError);
      }
    });

    it('answers 409 for an archived project', async () => {
      const project = await projectOf(teamA);
      await f.projects.updateProject({ id: project.id, status: 'archived' }, teamA);
      expect(await rejection(f.client.createBudget(valid(project.id), teamA))).toBeInstanceOf(ConflictError);
    });

    it('refuses a duplicate name in the project regardless of case, and allows it in another project', async () => {
      const project = await projectOf(teamA);
      const other = await projectOf(teamA);
      await f.client.createBudget(valid(project.id, { name: 'Storage' }), teamA);
      expect(
        await rejection(f.client.createBudget(valid(project.id, { name: 'STORAGE' }), teamA)),
      ).toBeInstanceOf(ConflictError);
      await expect(f.client.createBudget(valid(other.id, { name: 'storage' }), teamA)).resolves.toMatchObject(
        {
          name: 'storage',
        },
      );
    });
  });

  describe('read, update, delete', () => {
    it('reads a budget of the team; another team, an unknown and a malformed id are 404 everywhere', async () => {
      const project = await projectOf(teamA);
      const budget = await f.client.createBudget(valid(project.id), teamA);
      await expect(f.client.getBudget({ id: budget.id }, teamA)).resolves.toMatchObject({ id: budget.id });
      for (const id of [budget.id, newId('budget'), 'bdg_123', '']) {
        const as = id === budget.id ? teamB : teamA;
        expect(await rejection(f.client.getBudget({ id }, as))).toBeInstanceOf(NotFoundError);
        expect(await rejection(f.client.updateBudget({ id, name: 'x' }, as))).toBeInstanceOf(NotFoundError);
        expect(await rejection(f.client.deleteBudget({ id }, as))).toBeInstanceOf(NotFoundError);
      }
      await expect(f.client.getBudget({ id: budget.id }, teamA)).resolves.toMatchObject({
        name: budget.name,
      });
    });

    it.each([
      ['name', { name: 'renamed' }, { name: 'renamed' }],
      ['amount', { amount: 2500 }, { amount: 2500 }],
      ['currency', { currency: 'GBP' }, { currency: 'GBP' }],
      [
        'period',
        { period: 'quarterly' },
        {
          period: 'quarterly',
          periodStart: timestampFromDate(new Date('2026-10-01T00:00:00Z')),
          periodEnd: timestampFromDate(new Date('2027-01-01T00:00:00Z')),
        },
      ],
      ['tags', { tags: { values: { env: 'dev' } } }, { tags: { env: 'dev' } }],
      ['status archived', { status: 'archived' }, { status: 'archived' }],
    ])(
      'PATCH of %s changes only it and publishes budgets.budget.updated naming it',
      async (field, change, expected) => {
        const project = await projectOf(teamA);
        const budget = await f.client.createBudget(valid(project.id, { tags: { env: 'prod' } }), teamA);
        const updated = await f.client.updateBudget({ id: budget.id, ...change }, teamA);
        expect(updated).toMatchObject({
          ...budget,
          ...expected,
          updatedAt: expect.anything(),
          evaluatedAt: expect.anything(),
        });
        await eventually(() => (f.eventsOf(budget.id).includes('budgets.budget.updated') ? true : undefined));
        const event = f.received.find((e) => e.subject === budget.id && e.type === 'budgets.budget.updated')!;
        expect(decodeEvent(events.BudgetChangedSchema, event).changedFields).toEqual([field.split(' ')[0]]);
      },
    );

    it('PATCH of thresholds stores them sorted', async () => {
      const project = await projectOf(teamA);
      const budget = await f.client.createBudget(valid(project.id), teamA);
      const updated = await f.client.updateBudget({ id: budget.id, thresholds: { values: [90, 10] } }, teamA);
      expect(updated.thresholds.map((t) => t.percentage)).toEqual([10, 90]);
    });

    it('PATCH with nothing or the same values changes nothing and publishes nothing', async () => {
      const project = await projectOf(teamA);
      const budget = await f.client.createBudget(valid(project.id), teamA);
      await eventually(() => (f.eventsOf(budget.id).length ? true : undefined));
      const same = await f.client.updateBudget(
        { id: budget.id, name: budget.name, amount: budget.amount },
        teamA,
      );
      expect(same.updatedAt).toEqual(budget.updatedAt);
      await sleep(300);
      expect(f.eventsOf(budget.id)).toEqual(['budgets.budget.created']);
    });

    it.each([
      ['status breached', { status: 'breached' }, ['status']],
      ['an unknown status', { status: 'paused' }, ['status']],
      ['a zero amount and a bad currency', { amount: 0, currency: 'euro' }, ['amount', 'currency']],
      ['empty thresholds', { thresholds: { values: [] } }, ['thresholds']],
      ['a blank name', { name: ' ' }, ['name']],
    ])('PATCH refuses %s with 422 and leaves the budget as it was', async (_case, change, fields) => {
      const project = await projectOf(teamA);
      const budget = await f.client.createBudget(valid(project.id), teamA);
      const error = await rejection(f.client.updateBudget({ id: budget.id, ...change }, teamA));
      expect(error).toBeInstanceOf(ValidationError);
      expect((error as ValidationError).details.map((d) => d.field)).toEqual(fields);
      expect(await f.client.getBudget({ id: budget.id }, teamA)).toEqual(budget);
    });

    it('PATCH to a name taken in the project is 409', async () => {
      const project = await projectOf(teamA);
      await f.client.createBudget(valid(project.id, { name: 'Taken' }), teamA);
      const budget = await f.client.createBudget(valid(project.id), teamA);
      expect(await rejection(f.client.updateBudget({ id: budget.id, name: 'taken' }, teamA))).toBeInstanceOf(
        ConflictError,
      );
    });

    it('DELETE removes the budget and publishes budgets.budget.deleted once', async () => {
      const project = await projectOf(teamA);
      const budget = await f.client.createBudget(valid(project.id), teamA);
      await f.client.deleteBudget({ id: budget.id }, teamA);
      expect(await rejection(f.client.getBudget({ id: budget.id }, teamA))).toBeInstanceOf(NotFoundError);
      expect(await rejection(f.client.deleteBudget({ id: budget.id }, teamA))).toBeInstanceOf(NotFoundError);
      await eventually(() => (f.eventsOf(budget.id).includes('budgets.budget.deleted') ? true : undefined));
      await sleep(300);
      expect(f.eventsOf(budget.id)).toEqual(['budgets.budget.created', 'budgets.budget.deleted']);
    });

    it('the project read lists its budgets and counts the ones not archived', async () => {
      const project = await projectOf(teamA);
      const kept = await f.client.createBudget(valid(project.id, { name: 'kept' }), teamA);
      const archived = await f.client.createBudget(valid(project.id, { name: 'archived' }), teamA);
      await f.client.updateBudget({ id: archived.id, status: 'archived' }, teamA);
      const read = await f.projects.getProject({ id: project.id }, teamA);
      expect(read.budgetCount).toBe(1);
      expect(read.budgets.map((b) => [b.id, b.status])).toEqual([
        [kept.id, 'active'],
        [archived.id, 'archived'],
      ]);
      const listed = await f.projects.listProjects({}, teamA);
      expect(listed.projects.find((p) => p.id === project.id)!.budgetCount).toBe(1);
    });
  });

  describe('list', () => {
    const team = { teamId: newId('team') };
    const connection = newId('connection');
    const rows = [
      { name: 'delta', amount: 300, spend: 50 },
      { name: 'Alpha', amount: 100, spend: 90 },
      { name: 'charlie', amount: 500, spend: 10 },
      { name: 'Bravo', amount: 200, spend: 70 },
      { name: 'echo', amount: 400, spend: 30 },
    ];
    let created: budgets.Budget[] = [];
    let otherProject: string;

    beforeAll(async () => {
      const project = await projectOf(team, [connection]);
      otherProject = (await projectOf(team)).id;
      created = [];
      for (const [index, row] of rows.entries()) {
        f.spend.set(`${connection}#t${index}`, row.spend);
        f.clock.now = new Date(f.clock.now.getTime() + 1000);
        created.push(
          await f.client.createBudget(
            valid(project.id, { name: row.name, amount: row.amount, tags: { team: `t${index}` } }),
            team,
          ),
        );
      }
      await f.client.createBudget(valid(otherProject, { name: 'elsewhere' }), team);
      await f.client.updateBudget({ id: created[2]!.id, status: 'archived' }, team);
    });

    const value = (b: budgets.Budget, field: string): number | string =>
      field === 'name'
        ? b.name.toLowerCase()
        : field === 'created_at'
          ? timestampDate(b.createdAt!).getTime()
          : field === 'amount'
            ? b.amount
            : field === 'current_spend'
              ? b.currentSpend
              : b.percentageUsed;

    it('evaluated each with the spend of its tags', () => {
      expect(created.map((b) => b.currentSpend)).toEqual(rows.map((r) => r.spend));
      expect(created[1]!.percentageUsed).toBe(90);
      expect(created[0]!.percentageUsed).toBe(16.67);
    });

    it.each(
      ['amount', 'name', 'created_at', 'current_spend', 'percentage_used'].flatMap((field) => [
        [field, false],
        [field, true],
      ]),
    )('sorts by %s (descending: %s)', async (field, descending) => {
      const { budgets: list } = await f.client.listBudgets(
        {
          projectId: created[0]!.projectId,
          sort: { field: field as string, descending: descending as boolean },
        },
        team,
      );
      const expected = [...list].sort((a, b) => {
        const [x, y] = [value(a, field as string), value(b, field as string)];
        return (x < y ? -1 : x > y ? 1 : 0) * (descending ? -1 : 1);
      });
      expect(list).toHaveLength(5);
      expect(list.map((b) => b.id)).toEqual(expected.map((b) => b.id));
      const first = descending ? Math.max : Math.min;
      if (field !== 'name') {
        expect(value(list[0]!, field as string)).toBe(
          first(...list.map((b) => value(b, field as string) as number)),
        );
      }
    });

    it('sorts newest first by default', async () => {
      const { budgets: list } = await f.client.listBudgets({ projectId: created[0]!.projectId }, team);
      expect(list.map((b) => b.id)).toEqual(created.map((b) => b.id).reverse());
    });

    it('filters by project and status', async () => {
      const ofProject = await f.client.listBudgets({ projectId: otherProject }, team);
      expect(ofProject.budgets.map((b) => b.name)).toEqual(['elsewhere']);
      const archived = await f.client.listBudgets({ status: 'archived' }, team);
      expect(archived.budgets.map((b) => b.id)).toEqual([created[2]!.id]);
      const active = await f.client.listBudgets({ status: 'active' }, team);
      expect(active.meta!.totalCount).toBe(5);
      expect((await f.client.listBudgets({ status: 'breached' }, team)).budgets).toEqual([]);
      expect((await f.client.listBudgets({ projectId: newId('project') }, team)).budgets).toEqual([]);
    });

    it('shows nothing of another team', async () => {
      const theirs = await f.client.listBudgets({ projectId: created[0]!.projectId }, teamB);
      expect(theirs.budgets).toEqual([]);
      expect(theirs.meta!.totalCount).toBe(0);
    });

    it('pages with meta arithmetic, and an empty page past the end', async () => {
      const page = (p: number, perPage: number) => f.client.listBudgets({ page: { page: p, perPage } }, team);
      const first = await page(1, 2);
      expect(first.meta).toMatchObject({ currentPage: 1, perPage: 2, totalPages: 3, totalCount: 6 });
      const last = await page(3, 2);
      expect(last.budgets).toHaveLength(2);
      const past = await page(4, 2);
      expect(past.budgets).toEqual([]);
      expect(past.meta).toMatchObject({ currentPage: 4, totalPages: 3, totalCount: 6 });
      const all = await page(1, 100);
      expect(all.budgets).toHaveLength(6);
      const ids = [...first.budgets, ...(await page(2, 2)).budgets, ...last.budgets].map((b) => b.id);
      expect(ids).toEqual(all.budgets.map((b) => b.id));
    });

    it.each([
      ['per_page 101', { page: { page: 1, perPage: 101 } }, 'per_page'],
      ['a negative page', { page: { page: -1, perPage: 10 } }, 'page'],
      ['a negative per_page', { page: { page: 1, perPage: -1 } }, 'per_page'],
      ['an unknown sort field', { sort: { field: 'forecast_spend', descending: false } }, 'sort'],
      ['an unknown status', { status: 'open' }, 'status'],
    ])('refuses %s with 400', async (_case, request, field) => {
      const error = await rejection(f.client.listBudgets(request, team));
      expect(error).toBeInstanceOf(BadRequestError);
      expect((error as BadRequestError).details.map((d) => d.field)).toEqual([field]);
    });
  });
});

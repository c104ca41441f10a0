import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newId } from '@costgov/ids';
import { parse } from 'csv-parse/sync';
import { eventually, usageBased } from '@costgov/testing';
import type { RunningSystem } from '../src/system';
import { expectError, restCaller, startRestSystem, type Reply } from './support/rest';

const bootstrapKey = 'cg_live_restbudgetsbootstrapkey000000000000';
const call = restCaller(() => system.url, bootstrapKey);
let system: RunningSystem;
let otherTeamKey: string;
let readOnlyKey: string;

const fieldsOf = (reply: Reply) => (reply.body.error.details as Array<{ field: string }>).map((d) => d.field);

beforeAll(async () => {
  ({ system, otherTeamKey, readOnlyKey } = await startRestSystem(bootstrapKey));
});

afterAll(() => system?.stop());

let counter = 0;
const unique = (prefix: string) => `${prefix}-${++counter}-${Date.now()}`;

async function newConnection(key?: string): Promise<string> {
  const reply = await call('POST', '/v1/guard/connections', {
    key,
    body: { name: unique('aws'), provider: 'aws' },
  });
  expect(reply.status, JSON.stringify(reply.body)).toBe(201);
  return reply.body.data.id;
}

async function newProject(connectionIds: string[] = [], key?: string): Promise<string> {
  const reply = await call('POST', '/v1/guard/projects', {
    key,
    body: { name: unique('project'), connection_ids: connectionIds },
  });
  expect(reply.status, JSON.stringify(reply.body)).toBe(201);
  return reply.body.data.id;
}

const budgetBody = (projectId: string, extra: Record<string, unknown> = {}) => ({
  project_id: projectId,
  name: unique('budget'),
  amount: 1000,
  currency: 'USD',
  period: 'monthly',
  thresholds: [50, 80, 100],
  ...extra,
});

/**
 * A small FOCUS export of this month (or of the month `monthsBack` before it, whose days it fills from
 * the 1st): one row per (EffectiveCost, team tag).
 */
function focusFile(rows: Array<{ cost: number; team: string }>, monthsBack = 0): string {
  const now = new Date();
  const start = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth() - monthsBack, 1));
  const end = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth() - monthsBack + 1, 1));
  const stamp = (d: Date) => d.toISOString().replace('.000Z', 'Z');
  const header =
    'BilledCost,EffectiveCost,BillingCurrency,BillingPeriodStart,BillingPeriodEnd,ChargePeriodStart,ChargePeriodEnd,ServiceName,ResourceId,Tags';
  const lines = rows.map(({ cost, team }, i) => {
    const day = new Date(start.getTime() + (i % Math.max(1, now.getUTCDate())) * 86_400_000);
    const tags = `"${JSON.stringify({ team }).replaceAll('"', '""')}"`;
    return [
      cost,
      cost,
      'USD',
      stamp(start),
      stamp(end),
      stamp(day),
      stamp(new Date(day.getTime() + 3_600_000)),
      'EC2',
      `i-${i}`,
      tags,
    ].join(',');
  });
  return `${header}\n${lines.join('\n')}\n`;
}

describe('REST /v1/guard/budgets through the gateway', () => {
  describe('authentication', () => {
    it('answers 401 without a credential and 403 to a write with a read-only key', async () => {
      expectError(await call('GET', '/v1/guard/budgets', { key: null }), 401, 'unauthorized');
      const projectId = await newProject();
      expectError(
        await call('POST', '/v1/guard/budgets', { key: readOnlyKey, body: budgetBody(projectId) }),
        403,
        'forbidden',
      );
      expect((await call('GET', '/v1/guard/budgets', { key: readOnlyKey })).status).toBe(200);
    });
  });

  describe('lifecycle', () => {
    it('creates (201 + Location), reads, lists, updates and deletes (204) a budget', async () => {
      const projectId = await newProject();
      const created = await call('POST', '/v1/guard/budgets', {
        body: budgetBody(projectId, { name: 'Compute', thresholds: [100, 50], tags: { env: 'prod' } }),
      });
      expect(created.status, JSON.stringify(created.body)).toBe(201);
      const budget = created.body.data;
      expect(created.headers.get('location')).toBe(`/v1/guard/budgets/${budget.id}`);
      expect(Object.keys(budget).sort()).toEqual(
        [
          'id',
          'project_id',
          'name',
          'amount',
          'currency',
          'period',
          'current_spend',
          'percentage_used',
          'forecast_spend',
          'unconverted_spend',
          'data_through',
          'status',
          'thresholds',
          'tags',
          'period_start',
          'period_end',
          'evaluated_at',
          'created_at',
          'updated_at',
        ].sort(),
      );
      expect(budget).toMatchObject({
        project_id: projectId,
        name: 'Compute',
        amount: 1000,
        currency: 'USD',
        period: 'monthly',
        current_spend: 0,
        percentage_used: 0,
        forecast_spend: 0,
        unconverted_spend: [],
        data_through: null,
        status: 'active',
        thresholds: [
          { percentage: 50, notified_at: null },
          { percentage: 100, notified_at: null },
        ],
        tags: { env: 'prod' },
      });
      const now = new Date();
      expect(budget.period_start).toBe(
        new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), 1)).toISOString(),
      );

      const read = await call('GET', `/v1/guard/budgets/${budget.id}`);
      expect(read.status).toBe(200);
      expect(read.body.data).toEqual(budget);
      const listed = await call('GET', `/v1/guard/budgets?project_id=${projectId}`);
      expect(listed.body.data.map((b: { id: string }) => b.id)).toEqual([budget.id]);
      expect(listed.body.meta).toEqual({ current_page: 1, per_page: 25, total_pages: 1, total_count: 1 });

      const patched = await call('PATCH', `/v1/guard/budgets/${budget.id}`, {
        body: { amount: 2500, period: 'yearly', thresholds: [90], tags: {} },
      });
      expect(patched.status).toBe(200);
      expect(patched.body.data).toMatchObject({
        amount: 2500,
        period: 'yearly',
        thresholds: [{ percentage: 90, notified_at: null }],
        tags: {},
        period_start: new Date(Date.UTC(now.getUTCFullYear(), 0, 1)).toISOString(),
        period_end: new Date(Date.UTC(now.getUTCFullYear() + 1, 0, 1)).toISOString(),
      });
      const archived = await call('PATCH', `/v1/guard/budgets/${budget.id}`, {
        body: { status: 'archived' },
      });
      expect(archived.body.data.status).toBe('archived');

      const deleted = await call('DELETE', `/v1/guard/budgets/${budget.id}`);
      expect(deleted.status).toBe(204);
      expect(deleted.body).toBeUndefined();
      expectError(await call('GET', `/v1/guard/budgets/${budget.id}`), 404, 'not_found');
    });

    it('the project read shows the budget summaries and counts the ones not archived', async () => {
      const projectId = await newProject();
      const kept = (await call('POST', '/v1/guard/budgets', { body: budgetBody(projectId) })).body.data;
      const old = (await call('POST', '/v1/guard/budgets', { body: budgetBody(projectId) })).body.data;
      await call('PATCH', `/v1/guard/budgets/${old.id}`, { body: { status: 'archived' } });
      const project = (await call('GET', `/v1/guard/projects/${projectId}`)).body.data;
      expect(project.budget_count).toBe(1);
      expect(project.budgets).toEqual([
        {
          id: kept.id,
          name: kept.name,
          amount: 1000,
          currency: 'USD',
          period: 'monthly',
          percentage_used: 0,
          status: 'active',
        },
        {
          id: old.id,
          name: old.name,
          amount: 1000,
          currency: 'USD',
          period: 'monthly',
          percentage_used: 0,
          status: 'archived',
        },
      ]);
    });
  });

  describe('bad input', () => {
    it('answers 422 with one detail per field for a body the document refuses, and stores nothing', async () => {
      const projectId = await newProject();
      const reply = await call('POST', '/v1/guard/budgets', {
        body: {
          project_id: projectId,
          name: '',
          amount: 0,
          currency: 'usd',
          period: 'weekly',
          thresholds: [],
          tags: { env: 1 },
          colour: 'red',
        },
      });
      expectError(reply, 422, 'validation_error');
      expect(fieldsOf(reply)).toEqual(
        expect.arrayContaining(['name', 'amount', 'currency', 'period', 'thresholds', 'tags.env', 'colour']),
      );
      expect((await call('GET', `/v1/guard/budgets?project_id=${projectId}`)).body.data).toEqual([]);
    });

    it('answers 422 for what only the service knows: a well-shaped but unknown currency code', async () => {
      const projectId = await newProject();
      const reply = await call('POST', '/v1/guard/budgets', {
        body: budgetBody(projectId, { currency: 'XYZ' }),
      });
      expectError(reply, 422, 'validation_error');
      expect(reply.body.error.details).toEqual([
        { field: 'currency', message: expect.stringContaining("'XYZ' is not an ISO 4217 currency code") },
      ]);
    });

    it('answers 422 to a PATCH setting status breached', async () => {
      const projectId = await newProject();
      const budget = (await call('POST', '/v1/guard/budgets', { body: budgetBody(projectId) })).body.data;
      const reply = await call('PATCH', `/v1/guard/budgets/${budget.id}`, { body: { status: 'breached' } });
      expectError(reply, 422, 'validation_error');
      expect(fieldsOf(reply)).toEqual(['status']);
    });

    it('answers 404 for a project of another team and 409 for an archived project or a taken name', async () => {
      const theirs = await newProject([], otherTeamKey);
      expectError(await call('POST', '/v1/guard/budgets', { body: budgetBody(theirs) }), 404, 'not_found');
      const archived = await newProject();
      await call('PATCH', `/v1/guard/projects/${archived}`, { body: { status: 'archived' } });
      expectError(await call('POST', '/v1/guard/budgets', { body: budgetBody(archived) }), 409, 'conflict');
      const projectId = await newProject();
      await call('POST', '/v1/guard/budgets', { body: budgetBody(projectId, { name: 'Taken' }) });
      expectError(
        await call('POST', '/v1/guard/budgets', { body: budgetBody(projectId, { name: 'TAKEN' }) }),
        409,
        'conflict',
      );
    });

    it("answers 404 to every operation on another team's budget and leaves it as it was", async () => {
      const projectId = await newProject();
      const budget = (await call('POST', '/v1/guard/budgets', { body: budgetBody(projectId) })).body.data;
      const key = otherTeamKey;
      expectError(await call('GET', `/v1/guard/budgets/${budget.id}`, { key }), 404, 'not_found');
      expectError(
        await call('PATCH', `/v1/guard/budgets/${budget.id}`, { key, body: { amount: 1 } }),
        404,
        'not_found',
      );
      expectError(await call('DELETE', `/v1/guard/budgets/${budget.id}`, { key }), 404, 'not_found');
      expect((await call('GET', `/v1/guard/budgets?project_id=${projectId}`, { key })).body.data).toEqual([]);
      expect((await call('GET', `/v1/guard/budgets/${budget.id}`)).body.data).toEqual(budget);
    });

    it('refuses an unknown connection on a project, naming it', async () => {
      const known = await newConnection();
      const unknown = `con_${newId('connection').slice(4)}`;
      const reply = await call('POST', '/v1/guard/projects', {
        body: { name: unique('p'), connection_ids: [known, unknown] },
      });
      expectError(reply, 422, 'validation_error');
      expect(reply.body.error.details).toEqual([
        { field: 'connection_ids[1]', message: `'${unknown}' is not a connection of this team` },
      ]);
      const theirs = await newConnection(otherTeamKey);
      const patch = await call('PATCH', `/v1/guard/projects/${await newProject([known])}`, {
        body: { connection_ids: [theirs] },
      });
      expectError(patch, 422, 'validation_error');
    });
  });

  describe('list', () => {
    const rows = [
      { name: 'delta', amount: 300 },
      { name: 'Alpha', amount: 100 },
      { name: 'charlie', amount: 500 },
      { name: 'Bravo', amount: 200 },
    ];
    let projectId: string;
    let ids: string[] = [];

    beforeAll(async () => {
      projectId = await newProject();
      ids = [];
      for (const row of rows) {
        ids.push(
          (await call('POST', '/v1/guard/budgets', { body: budgetBody(projectId, row) })).body.data.id,
        );
      }
      await call('PATCH', `/v1/guard/budgets/${ids[2]}`, { body: { status: 'archived' } });
    });

    it.each([
      ['amount', ['Alpha', 'Bravo', 'delta', 'charlie']],
      ['name', ['Alpha', 'Bravo', 'charlie', 'delta']],
      ['created_at', ['delta', 'Alpha', 'charlie', 'Bravo']],
    ])('sorts by %s both ways', async (field, ascending) => {
      const up = await call('GET', `/v1/guard/budgets?project_id=${projectId}&sort=${field}`);
      expect(up.body.data.map((b: { name: string }) => b.name)).toEqual(ascending);
      const down = await call('GET', `/v1/guard/budgets?project_id=${projectId}&sort=-${field}`);
      expect(down.body.data.map((b: { name: string }) => b.name)).toEqual([...ascending].reverse());
    });

    it.each(['current_spend', 'percentage_used'])('sorts by %s both ways, ties by id', async (field) => {
      const up = await call('GET', `/v1/guard/budgets?project_id=${projectId}&sort=${field}`);
      expect(up.body.data.map((b: { id: string }) => b.id)).toEqual(ids);
      const down = await call('GET', `/v1/guard/budgets?project_id=${projectId}&sort=-${field}`);
      expect(down.body.data.map((b: { id: string }) => b.id)).toEqual([...ids].reverse());
    });

    it('filters by status', async () => {
      const archived = await call('GET', `/v1/guard/budgets?project_id=${projectId}&status=archived`);
      expect(archived.body.data.map((b: { id: string }) => b.id)).toEqual([ids[2]]);
      const active = await call('GET', `/v1/guard/budgets?project_id=${projectId}&status=active`);
      expect(active.body.meta.total_count).toBe(3);
    });

    it('pages with meta arithmetic', async () => {
      const page = await call('GET', `/v1/guard/budgets?project_id=${projectId}&per_page=3&page=2`);
      expect(page.body.meta).toEqual({ current_page: 2, per_page: 3, total_pages: 2, total_count: 4 });
      expect(page.body.data).toHaveLength(1);
      const past = await call('GET', `/v1/guard/budgets?project_id=${projectId}&per_page=3&page=3`);
      expect(past.body.data).toEqual([]);
    });

    it.each([
      ['page=0', 'page'],
      ['per_page=0', 'per_page'],
      ['per_page=101', 'per_page'],
      ['per_page=abc', 'per_page'],
      ['sort=forecast_spend', 'sort'],
      ['sort=-colour', 'sort'],
      ['status=open', 'status'],
    ])('answers 400 to %s', async (query, field) => {
      const reply = await call('GET', `/v1/guard/budgets?${query}`);
      expectError(reply, 400, 'bad_request');
      expect(fieldsOf(reply)).toContain(field);
    });
  });

  describe('spend from uploaded cost data', () => {
    it('counts the FOCUS EffectiveCost of the project connections by tag, crosses thresholds and breaches', async () => {
      const connection = await newConnection();
      const projectId = await newProject([connection]);
      const all = (
        await call('POST', '/v1/guard/budgets', { body: budgetBody(projectId, { name: 'all', amount: 100 }) })
      ).body.data;
      const web = (
        await call('POST', '/v1/guard/budgets', {
          body: budgetBody(projectId, { name: 'web', amount: 100, tags: { team: 'web' } }),
        })
      ).body.data;
      const rows = [
        { cost: 30.25, team: 'web' },
        { cost: 12.5, team: 'data' },
        { cost: 40, team: 'web' },
        { cost: 25.75, team: 'data' },
      ];
      const upload = await call('POST', `/v1/guard/connections/${connection}/cost-data`, {
        raw: focusFile(rows),
        contentType: 'text/csv',
      });
      expect(upload.status, JSON.stringify(upload.body)).toBe(200);

      const total = rows.reduce((sum, r) => sum + r.cost, 0);
      const webTotal = rows.filter((r) => r.team === 'web').reduce((sum, r) => sum + r.cost, 0);
      const allRead = await eventually(async () => {
        const read = (await call('GET', `/v1/guard/budgets/${all.id}`)).body.data;
        return read.current_spend > 0 ? read : undefined;
      });
      expect(allRead.current_spend).toBeCloseTo(total, 6);
      expect(allRead).toMatchObject({ status: 'breached', percentage_used: 108.5 });
      expect(allRead.thresholds.every((t: { notified_at: string | null }) => t.notified_at !== null)).toBe(
        true,
      );
      expect(allRead.forecast_spend).toBeGreaterThanOrEqual(allRead.current_spend);
      // The file's rows fall on the first days of the month (focusFile): the data reaches the end of the last.
      const today = new Date();
      const monthStart = Date.UTC(today.getUTCFullYear(), today.getUTCMonth(), 1);
      const lastDay = Math.max(...rows.map((_, i) => i % Math.max(1, today.getUTCDate())));
      expect(allRead.data_through).toBe(new Date(monthStart + (lastDay + 1) * 86_400_000).toISOString());

      const webRead = await eventually(async () => {
        const read = (await call('GET', `/v1/guard/budgets/${web.id}`)).body.data;
        return read.current_spend > 0 ? read : undefined;
      });
      expect(webRead.current_spend).toBeCloseTo(webTotal, 6);
      expect(webRead.status).toBe('active');
      expect(webRead.thresholds.map((t: { notified_at: string | null }) => t.notified_at !== null)).toEqual([
        true,
        false,
        false,
      ]);

      const breached = await call('GET', `/v1/guard/budgets?project_id=${projectId}&status=breached`);
      expect(breached.body.data.map((b: { id: string }) => b.id)).toEqual([all.id]);
      const project = (await call('GET', `/v1/guard/projects/${projectId}`)).body.data;
      expect(project.budgets.find((b: { id: string }) => b.id === all.id).percentage_used).toBe(108.5);

      // Raising the amount above the spend makes it active at once.
      const raised = await call('PATCH', `/v1/guard/budgets/${all.id}`, { body: { amount: 200 } });
      expect(raised.body.data).toMatchObject({ status: 'active', percentage_used: 54.25 });
      // This month's file lies in the budgets' period: no warning that they will not count it.
      const codes = (upload.body.data.warnings as Array<{ code: string }>).map((w) => w.code);
      expect(codes).not.toContain('outside_budget_periods');
    });

    it('leaves charges dated after today out of the spend, so data_through does not run past today', async () => {
      const connection = await newConnection();
      const projectId = await newProject([connection]);
      const yearly = (
        await call('POST', '/v1/guard/budgets', { body: budgetBody(projectId, { period: 'yearly' }) })
      ).body.data;
      const now = new Date();
      const today = Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate());
      const stamp = (ms: number) => new Date(ms).toISOString().replace('.000Z', 'Z');
      const start = Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), 1);
      const end = Date.UTC(now.getUTCFullYear(), now.getUTCMonth() + 1, 1);
      const rows = [
        { at: today, cost: 10 }, // today: counted
        { at: today + 2 * 86_400_000, cost: 1000 }, // the day after tomorrow: not yet
      ];
      const file = [
        'BilledCost,EffectiveCost,BillingCurrency,BillingPeriodStart,BillingPeriodEnd,ChargePeriodStart,ChargePeriodEnd,ServiceName',
        ...rows.map(({ at, cost }) =>
          [cost, cost, 'USD', stamp(start), stamp(end), stamp(at), stamp(at + 3_600_000), 'EC2'].join(','),
        ),
      ].join('\n');
      const uploadedAt = new Date().toISOString();
      const upload = await call('POST', `/v1/guard/connections/${connection}/cost-data`, {
        raw: `${file}\n`,
        contentType: 'text/csv',
      });
      expect(upload.status, JSON.stringify(upload.body)).toBe(200);
      const codes = (upload.body.data.warnings as Array<{ code: string }>).map((w) => w.code);
      expect(codes).toContain('future_charges');
      const read = await eventually(async () => {
        const budget = (await call('GET', `/v1/guard/budgets/${yearly.id}`)).body.data;
        return budget.evaluated_at >= uploadedAt ? budget : undefined;
      });
      const counted = rows.filter((r) => r.at < today + 86_400_000);
      expect(read.current_spend).toBe(counted.reduce((sum, r) => sum + r.cost, 0));
      expect(read.data_through).toBe(new Date(today + 86_400_000).toISOString());
    });

    it('forecasts an upload by its rows: usage-based at its run rate, fees, taxes, credits and adjustments once', async () => {
      const connection = await newConnection();
      const projectId = await newProject([connection]);
      const monthly = (
        await call('POST', '/v1/guard/budgets', { body: budgetBody(projectId, { amount: 1_000_000 }) })
      ).body.data;
      // This month's export up to yesterday (today on the 1st), as a provider writes it: usage in both
      // spellings of the frequency and without one, a monthly fee and a purchase on the 1st, a tax row
      // marked Usage-Based, a credit, an adjustment marked Usage-based, and a tax on today's date (after
      // the last usage day).
      const now = new Date();
      const stamp = (ms: number) => new Date(ms).toISOString().replace('.000Z', 'Z');
      const start = Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), 1);
      const end = Date.UTC(now.getUTCFullYear(), now.getUTCMonth() + 1, 1);
      const today = Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate());
      const lastUsage = Math.max(start, today - 86_400_000);
      const rows: Array<[number, number, string, string]> = [
        [start, 300, 'Usage', 'Recurring'],
        [start, 500, 'Purchase', 'One-Time'],
        [start, 12.34, 'Tax', 'Usage-Based'],
        [start, 7, 'Purchase', 'NULL'],
        [start, 20, '', 'Recurring'],
        [start, -25, 'Credit', 'One-Time'],
        [start, 3.5, 'Adjustment', 'Usage-based'],
        [today, 9.99, 'Tax', 'Recurring'],
      ];
      for (let day = start, i = 0; day <= lastUsage; day += 86_400_000, i++) {
        rows.push([day, 40 + (i % 5), 'Usage', 'Usage-Based']);
        rows.push([day, 2.5, 'Usage', 'Usage-based']);
        rows.push([day, 1.25, 'usage', 'NULL']);
        rows.push([day, 0.75, '', '']);
      }
      const file = [
        'BilledCost,EffectiveCost,BillingCurrency,BillingPeriodStart,BillingPeriodEnd,ChargePeriodStart,ChargePeriodEnd,ServiceName,ResourceId,ChargeCategory,ChargeFrequency',
        ...rows.map(([at, cost, category, frequency], i) =>
          [cost, cost, 'USD', stamp(start), stamp(end), stamp(at), stamp(at + 3_600_000), 'EC2', `i-${i}`]
            .concat([category, frequency])
            .join(','),
        ),
      ].join('\n');
      const uploadedAt = new Date().toISOString();
      const upload = await call('POST', `/v1/guard/connections/${connection}/cost-data`, {
        raw: `${file}\n`,
        contentType: 'text/csv',
      });
      expect(upload.status, JSON.stringify(upload.body)).toBe(200);

      // The test's reading of the file (csv-parse) and of the rule (the test kit's usageBased).
      const records = parse(`${file}\n`, { columns: true }) as Record<string, string>[];
      const cost = (list: Record<string, string>[]) =>
        list.reduce((sum, r) => sum + Number(r.EffectiveCost), 0);
      const usage = records.filter((r) => usageBased(r.ChargeCategory, r.ChargeFrequency));
      const lastUsageDayEnd = Math.max(...usage.map((r) => Date.parse(r.ChargePeriodStart!))) + 86_400_000;
      // The forecast: the usage-based part over the days it covers times the month, the rest once.
      const projectedWith = (list: Record<string, string>[]) =>
        (cost(list) * (end - start)) / (lastUsageDayEnd - start) + cost(records) - cost(list);
      const expected = Math.round(projectedWith(usage) * 100) / 100;
      // Reading the frequency alone would project the tax marked Usage-Based and the adjustment marked
      // Usage-based too, every row as usage the fees and purchases as well: other forecasts.
      const byFrequency = records.filter((r) => r.ChargeFrequency!.toLowerCase() === 'usage-based');
      expect(Math.abs(projectedWith(byFrequency) - expected)).toBeGreaterThan(0.1);
      expect(Math.abs(projectedWith(records) - expected)).toBeGreaterThan(1);

      const read = await eventually(async () => {
        const budget = (await call('GET', `/v1/guard/budgets/${monthly.id}`)).body.data;
        return budget.evaluated_at >= uploadedAt ? budget : undefined;
      });
      expect(read.current_spend).toBeCloseTo(cost(records), 2);
      expect(read.forecast_spend).toBeCloseTo(expected, 2);
    });

    it("warns that last month's export lies outside the budgets' current period, which show 0 and no data", async () => {
      const lastMonth = focusFile([{ cost: 80, team: 'web' }], 1);
      // Without a budget reading the connection there is nothing to warn about.
      const bare = await newConnection();
      await newProject([bare]);
      const unread = await call('POST', `/v1/guard/connections/${bare}/cost-data`, {
        raw: lastMonth,
        contentType: 'text/csv',
      });
      expect(unread.status, JSON.stringify(unread.body)).toBe(200);
      expect(unread.body.data.warnings).toEqual([]);

      const connection = await newConnection();
      const projectId = await newProject([connection]);
      const monthly = (await call('POST', '/v1/guard/budgets', { body: budgetBody(projectId) })).body.data;
      const uploadedAt = new Date().toISOString();
      const upload = await call('POST', `/v1/guard/connections/${connection}/cost-data`, {
        raw: lastMonth,
        contentType: 'text/csv',
      });
      expect(upload.status, JSON.stringify(upload.body)).toBe(200);
      // The test's own months: the file's billing period is last month, the budget's this one.
      const now = new Date();
      const day = (year: number, month: number) =>
        new Date(Date.UTC(year, month, 1)).toISOString().slice(0, 10);
      const [y, m] = [now.getUTCFullYear(), now.getUTCMonth()];
      const warning = (
        upload.body.data.warnings as Array<{ code: string; message: string; details: object }>
      ).find((w) => w.code === 'outside_budget_periods');
      expect(warning, JSON.stringify(upload.body.data.warnings)).toBeDefined();
      expect(warning!.details).toEqual({
        billing_periods: `${day(y, m - 1)} to ${day(y, m)}`,
        budget_periods: `${day(y, m)} to ${day(y, m + 1)}`,
        budgets: '1',
      });
      expect(warning!.message).toMatch(/outside the current period.*will show 0/);

      // What the warning said: the budget counts nothing of the file and says it has no data.
      const read = await eventually(async () => {
        const budget = (await call('GET', `/v1/guard/budgets/${monthly.id}`)).body.data;
        // Evaluated again after the upload (costs.data.ingested), not only at its creation.
        return budget.evaluated_at >= uploadedAt ? budget : undefined;
      });
      expect(read).toMatchObject({ current_spend: 0, forecast_spend: 0, data_through: null });
    });
  });
});

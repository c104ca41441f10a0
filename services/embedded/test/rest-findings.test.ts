import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createOutbox } from '@costgov/bus';
import { newId } from '@costgov/ids';
import { recordFindings, type RuleResult } from '@costgov/scanner';
import { eventually } from '@costgov/testing';
import type { RunningSystem } from '../src/system';
import { expectError, restCaller, startRestSystem, type Reply } from './support/rest';

const bootstrapKey = 'cg_live_restfindingsbootstrapkey000000000000';
const call = restCaller(() => system.url, bootstrapKey);
let system: RunningSystem;
let teamId: string;
let otherTeamKey: string;
let readOnlyKey: string;
let projectId: string;
let otherProjectId: string;
let firstScan: string;
let secondScan: string;

const result = (ruleId: string, resourceId: string, extra: Partial<RuleResult> = {}): RuleResult => ({
  ruleId,
  resourceId,
  resourceType: 'compute_instance',
  severity: 'medium',
  title: `${ruleId} on ${resourceId}`,
  description: 'The instance ran below 5 % CPU for 14 days.',
  recommendation: 'Stop it or move it to a smaller size.',
  currency: 'USD',
  ...extra,
});

/** One scan's results stored as the scan worker stores them: in the scanner's database, with its outbox. */
async function recordScan(project: string, results: RuleResult[]): Promise<string> {
  const scanId = newId('scan');
  const scanner = system.services.find((s) => s.name === 'scanner')!;
  await scanner.db.transaction((tx) =>
    recordFindings(
      tx,
      { outbox: createOutbox({ source: 'scanner' }), newId, now: () => new Date() },
      { teamId, projectId: project, scanId, results },
    ),
  );
  return scanId;
}

const list = (query = '', key?: string) => call('GET', `/v1/guard/findings${query}`, { key });
const resourcesOf = (reply: Reply) =>
  (reply.body.data as Array<{ resource_id: string }>).map((f) => f.resource_id);
const idOf = async (resourceId: string) =>
  ((await list()).body.data as Array<{ id: string; resource_id: string }>).find(
    (f) => f.resource_id === resourceId,
  )!.id;

beforeAll(async () => {
  ({ system, teamId, otherTeamKey, readOnlyKey } = await startRestSystem(bootstrapKey));
  for (const name of ['checkout', 'search']) {
    const project = await call('POST', '/v1/guard/projects', { body: { name } });
    expect(project.status).toBe(201);
    if (name === 'checkout') projectId = project.body.data.id;
    else otherProjectId = project.body.data.id;
  }
  firstScan = await recordScan(projectId, [
    result('idle-compute', 'i-low', { severity: 'low' }),
    result('idle-compute', 'i-crit', {
      severity: 'critical',
      estimatedMonthlySavings: 412.5,
      projectedFromDays: 14,
    }),
    result('untagged', 'i-med'),
  ]);
  // The second scan of the project no longer sees i-low: it is resolved.
  secondScan = await recordScan(projectId, [
    result('idle-compute', 'i-crit', {
      severity: 'critical',
      estimatedMonthlySavings: 412.5,
      projectedFromDays: 14,
    }),
    result('untagged', 'i-med'),
  ]);
  await recordScan(otherProjectId, [result('untagged', 'j-high', { severity: 'high' })]);
});

afterAll(async () => {
  await system?.stop();
});

describe('REST /v1/guard/findings through the gateway', () => {
  it('lists the findings most severe first, with the spec fields and the extensions', async () => {
    const reply = await list();
    expect(reply.status).toBe(200);
    expect(resourcesOf(reply)).toEqual(['i-crit', 'j-high', 'i-med', 'i-low']);
    expect(reply.body.meta).toEqual({ current_page: 1, per_page: 25, total_pages: 1, total_count: 4 });
    expect(reply.body.data[0]).toEqual({
      id: expect.stringMatching(/^fnd_/),
      scan_id: secondScan,
      project_id: projectId,
      resource_id: 'i-crit',
      resource_type: 'compute_instance',
      severity: 'critical',
      status: 'open',
      title: 'idle-compute on i-crit',
      description: 'The instance ran below 5 % CPU for 14 days.',
      recommendation: 'Stop it or move it to a smaller size.',
      created_at: expect.stringMatching(/Z$/),
      rule_id: 'idle-compute',
      estimated_monthly_savings: 412.5,
      projected_from_days: 14,
      currency: 'USD',
      suppression_reason: null,
      updated_at: expect.stringMatching(/Z$/),
      resolved_at: null,
    });
    expect(reply.body.data[3]).toMatchObject({
      status: 'resolved',
      scan_id: firstScan,
      resolved_at: expect.stringMatching(/Z$/),
      estimated_monthly_savings: null,
      projected_from_days: null,
    });
  });

  it.each([
    [() => `?scan_id=${secondScan}`, ['i-crit', 'i-med']],
    [() => `?scan_id=${firstScan}`, ['i-low']],
    [() => `?project_id=${otherProjectId}`, ['j-high']],
    [() => '?severity=critical', ['i-crit']],
    [() => '?status=resolved', ['i-low']],
    [() => '?status=open&rule_id=untagged', ['j-high', 'i-med']],
    [() => '?status=suppressed', []],
    [() => `?project_id=${newId('project')}`, []],
    [() => '?per_page=2&page=2', ['i-med', 'i-low']],
    [() => '?per_page=3&page=3', []],
  ])('GET %s', async (query, expected) => {
    const reply = await list(query());
    expect(reply.status).toBe(200);
    expect(resourcesOf(reply)).toEqual(expected);
  });

  it('answers the page arithmetic in meta', async () => {
    expect((await list('?per_page=3&page=2')).body.meta).toEqual({
      current_page: 2,
      per_page: 3,
      total_pages: 2,
      total_count: 4,
    });
  });

  it.each([
    ['?per_page=0', 'per_page'],
    ['?per_page=101', 'per_page'],
    ['?per_page=ten', 'per_page'],
    ['?page=0', 'page'],
    ['?page=x', 'page'],
    ['?severity=urgent', 'severity'],
    ['?status=closed', 'status'],
    ['?project_id=', 'project_id'],
    ['?colour=red', 'colour'],
  ])('answers 400 to %s naming the parameter', async (query, field) => {
    const reply = await list(query);
    expectError(reply, 400, 'bad_request');
    expect(reply.body.error.details.map((d: { field: string }) => d.field)).toContain(field);
  });

  it("shows another team nothing, and answers 404 to another team's id", async () => {
    expect((await list('', otherTeamKey)).body.data).toEqual([]);
    expect((await list(`?project_id=${projectId}`, otherTeamKey)).body.data).toEqual([]);
    const id = await idOf('i-med');
    expectError(
      await call('PATCH', `/v1/guard/findings/${id}`, {
        key: otherTeamKey,
        body: { status: 'suppressed', reason: 'not yours' },
      }),
      404,
      'not_found',
    );
    for (const unknown of [newId('finding'), 'not-a-finding']) {
      expectError(
        await call('PATCH', `/v1/guard/findings/${unknown}`, { body: { status: 'suppressed', reason: 'x' } }),
        404,
        'not_found',
      );
    }
    expect((await list('?status=open')).body.data).toHaveLength(3);
  });

  it('refuses a PATCH with a read-only key (403) and lets it read', async () => {
    const id = await idOf('i-med');
    expectError(
      await call('PATCH', `/v1/guard/findings/${id}`, {
        key: readOnlyKey,
        body: { status: 'suppressed', reason: 'x' },
      }),
      403,
      'forbidden',
    );
    expect((await list('', readOnlyKey)).status).toBe(200);
  });

  it.each([
    ['no body fields', {}, 'status'],
    ['an unknown status', { status: 'resolved' }, 'status'],
    ['status not a string', { status: 1 }, 'status'],
    ['suppressed without a reason', { status: 'suppressed' }, 'reason'],
    ['an empty reason', { status: 'suppressed', reason: '' }, 'reason'],
    ['a blank reason', { status: 'suppressed', reason: '   ' }, 'reason'],
    ['a reason of 501 characters', { status: 'suppressed', reason: 'x'.repeat(501) }, 'reason'],
    ['open with a reason', { status: 'open', reason: 'why' }, 'reason'],
    ['an unknown field', { status: 'suppressed', reason: 'ok', note: 'x' }, 'note'],
  ])('answers 422 to %s and changes nothing', async (_case, body, field) => {
    const id = await idOf('i-med');
    const before = (await list(`?scan_id=${secondScan}&rule_id=untagged`)).body.data[0];
    const reply = await call('PATCH', `/v1/guard/findings/${id}`, { body });
    expectError(reply, 422, 'validation_error');
    expect(reply.body.error.details.map((d: { field: string }) => d.field)).toContain(field);
    expect((await list(`?scan_id=${secondScan}&rule_id=untagged`)).body.data[0]).toEqual(before);
  });

  it('suppresses with a reason, keeps it suppressed across a scan, reopens; other transitions are 409', async () => {
    const id = await idOf('i-med');
    const suppressed = await call('PATCH', `/v1/guard/findings/${id}`, {
      body: { status: 'suppressed', reason: 'Tagged by the platform team next sprint.' },
    });
    expect(suppressed.status).toBe(200);
    expect(suppressed.body.data).toMatchObject({
      id,
      status: 'suppressed',
      suppression_reason: 'Tagged by the platform team next sprint.',
    });
    expectError(
      await call('PATCH', `/v1/guard/findings/${id}`, { body: { status: 'suppressed', reason: 'again' } }),
      409,
      'conflict',
    );

    // A later scan that sees it, and one that does not: it stays suppressed.
    const third = await recordScan(projectId, [
      result('untagged', 'i-med'),
      result('idle-compute', 'i-crit'),
    ]);
    await recordScan(projectId, [result('idle-compute', 'i-crit')]);
    expect((await list('?status=suppressed')).body.data).toEqual([
      expect.objectContaining({ id, scan_id: third, status: 'suppressed' }),
    ]);

    const reopened = await call('PATCH', `/v1/guard/findings/${id}`, { body: { status: 'open' } });
    expect(reopened.status).toBe(200);
    expect(reopened.body.data).toMatchObject({ id, status: 'open', suppression_reason: null });
    expectError(
      await call('PATCH', `/v1/guard/findings/${id}`, { body: { status: 'open' } }),
      409,
      'conflict',
    );

    const resolved = await idOf('i-low');
    expectError(
      await call('PATCH', `/v1/guard/findings/${resolved}`, { body: { status: 'suppressed', reason: 'x' } }),
      409,
      'conflict',
    );
  });

  it("purges a deleted project's findings and keeps the others'", async () => {
    expect((await call('DELETE', `/v1/guard/projects/${otherProjectId}`)).status).toBe(204);
    await eventually(async () =>
      (await list(`?project_id=${otherProjectId}`)).body.data.length === 0 ? true : undefined,
    );
    expect((await list(`?project_id=${projectId}`)).body.meta.total_count).toBe(3);
  });
});

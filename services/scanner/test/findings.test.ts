import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { create } from '@bufbuild/protobuf';
import { timestampDate } from '@bufbuild/protobuf/wkt';
import { createOutbox, encodePayload, type Bus, type CloudEvent } from '@costgov/bus';
import { events, scanner } from '@costgov/contracts';
import type { Db } from '@costgov/db';
import { BadRequestError, ConflictError, NotFoundError, ValidationError } from '@costgov/errors';
import { newId } from '@costgov/ids';
import type { RpcClient } from '@costgov/rpc';
import { eventually, startServiceUnderTest, type ServiceUnderTest } from '@costgov/testing';
import { findingsOfScan } from '../src/findings/findings';
import { recordFindings } from '../src/findings/record';
import { scannerModule } from '../src/module';
import { allRules } from '../src/rules/catalogue';
import type { RuleResult } from '../src/rules/types';

let findings: ServiceUnderTest<{ findings: typeof scanner.FindingsService }>;
let bus: Bus;
let db: Db;
let client: RpcClient<typeof scanner.FindingsService>;
const outbox = createOutbox({ source: 'scanner' });
// Each recording one minute later, so "newest" is well defined.
let clockMs = Date.parse('2026-11-20T08:00:00Z');
const deps = { outbox, newId, now: () => new Date((clockMs += 60_000)) };

beforeAll(async () => {
  findings = await startServiceUnderTest(scannerModule(), { clients: { findings: scanner.FindingsService } });
  ({ db, bus } = findings);
  client = findings.clients.findings;
});

afterAll(() => findings?.stop());

const result = (ruleId: string, resourceId: string, extra: Partial<RuleResult> = {}): RuleResult => ({
  ruleId,
  resourceId,
  resourceType: 'compute_instance',
  severity: 'medium',
  title: `${ruleId} on ${resourceId}`,
  description: 'What is wrong.',
  recommendation: 'What to do.',
  currency: 'USD',
  ...extra,
});

/** Records one scan of the project, as the worker does in its completing transaction. */
async function scan(teamId: string, projectId: string, results: RuleResult[], scanId = newId('scan')) {
  const { findingsCount } = await db.transaction((tx) =>
    recordFindings(tx, deps, { teamId, projectId, scanId, results }),
  );
  return { scanId, findingsCount };
}

async function findingOf(teamId: string, ruleId: string, resourceId: string) {
  const { rows } = await db.query<{ id: string }>(
    'SELECT id FROM findings WHERE team_id = $1 AND rule_id = $2 AND resource_id = $3',
    [teamId, ruleId, resourceId],
  );
  return rows[0]?.id;
}

/** The finding events written for a project, oldest first: [type, finding id, status]. */
async function findingEvents(projectId: string) {
  const { rows } = await db.query<{ type: string; data: events.FindingChanged }>(
    `SELECT type, data FROM outbox WHERE type LIKE 'scanner.finding.%' AND data->>'projectId' = $1
     ORDER BY created_at, id`,
    [projectId],
  );
  return rows.map((row) => [row.type.replace('scanner.finding.', ''), row.data.findingId, row.data.status]);
}

type Filter = Partial<
  Pick<scanner.ListFindingsRequest, 'scanId' | 'projectId' | 'severity' | 'status' | 'ruleId'>
>;

const byId = (list: scanner.Finding[]) => new Map(list.map((f) => [f.id, f]));

describe('recordFindings across scans', () => {
  it('leaves the findings alone when a newer scan of the project already completed', async () => {
    const teamId = newId('team');
    const projectId = newId('project');
    const [older, newer] = [newId('scan'), newId('scan')];
    await db.query(
      `INSERT INTO scans (id, team_id, project_id, status, credits_used, created_at)
       VALUES ($1, $3, $4, 'running', 1, now() - interval '1 minute'), ($2, $3, $4, 'completed', 1, now())`,
      [older, newer, teamId, projectId],
    );
    await scan(teamId, projectId, [result('idle', 'i-new')], newer);
    const seen = (await findingOf(teamId, 'idle', 'i-new'))!;

    // The older scan finishes last, having seen something else: nothing changes, no event.
    const events = await findingEvents(projectId);
    expect((await scan(teamId, projectId, [result('idle', 'i-old')], older)).findingsCount).toBe(1);
    expect(await findingOf(teamId, 'idle', 'i-old')).toBeUndefined();
    const { rows } = await db.query<{ status: string; scan_id: string }>(
      'SELECT status, scan_id FROM findings WHERE id = $1',
      [seen],
    );
    expect(rows[0]).toEqual({ status: 'open', scan_id: newer });
    expect(await findingEvents(projectId)).toEqual(events);
  });

  it('opens, refreshes, resolves and reopens by fingerprint; suppressed stays suppressed; events once each', async () => {
    const teamId = newId('team');
    const projectId = newId('project');
    const ctx = { teamId, actor: newId('apiKey') };

    // Scan 1: three problems, all new.
    const first = await scan(teamId, projectId, [
      result('idle', 'i-a', { estimatedMonthlySavings: 40, projectedFromDays: 9 }),
      result('idle', 'i-b'),
      result('untagged', 'i-c', { severity: 'low' }),
    ]);
    expect(first.findingsCount).toBe(3);
    const a = (await findingOf(teamId, 'idle', 'i-a'))!;
    const b = (await findingOf(teamId, 'idle', 'i-b'))!;
    const c = (await findingOf(teamId, 'untagged', 'i-c'))!;
    expect(a).toMatch(/^fnd_/);
    await client.updateFinding(
      { id: c, status: 'suppressed', reason: 'Accepted: lab machine', actor: '' },
      ctx,
    );

    // Scan 2: a again (more severe), c again (suppressed), b gone.
    const second = await scan(teamId, projectId, [
      result('idle', 'i-a', {
        severity: 'high',
        estimatedMonthlySavings: 55,
        projectedFromDays: 30,
        title: 'Idle, worse',
      }),
      result('untagged', 'i-c', { severity: 'low' }),
    ]);
    expect(second.findingsCount).toBe(2);
    let list = byId((await client.listFindings({ projectId }, ctx)).findings);
    expect(list.get(a)).toMatchObject({
      status: 'open',
      severity: 'high',
      scanId: second.scanId,
      title: 'Idle, worse',
      estimatedMonthlySavings: 55,
      projectedFromDays: 30,
    });
    // A finding without a monthly figure has no days to state.
    expect(list.get(c)!.projectedFromDays).toBeUndefined();
    expect(list.get(b)).toMatchObject({ status: 'resolved', scanId: first.scanId });
    expect(list.get(b)!.resolvedAt).toBeDefined();
    expect(list.get(c)).toMatchObject({ status: 'suppressed', suppressionReason: 'Accepted: lab machine' });

    // Scan 3: b is back (reopens), a gone (resolved), c unseen (stays suppressed), d new.
    const third = await scan(teamId, projectId, [result('idle', 'i-b'), result('oversized', 'i-d')]);
    expect(third.findingsCount).toBe(2);
    const d = (await findingOf(teamId, 'oversized', 'i-d'))!;
    list = byId((await client.listFindings({ projectId }, ctx)).findings);
    expect(list.size).toBe(4);
    expect(list.get(a)).toMatchObject({ status: 'resolved', scanId: second.scanId });
    expect(list.get(b)).toMatchObject({ status: 'open', scanId: third.scanId });
    expect(list.get(b)!.resolvedAt).toBeUndefined();
    expect(list.get(c)).toMatchObject({ status: 'suppressed', scanId: second.scanId });
    expect(list.get(d)).toMatchObject({ status: 'open', scanId: third.scanId });
    const { rows } = await db.query<{ first_scan_id: string }>(
      'SELECT first_scan_id FROM findings WHERE id = $1',
      [b],
    );
    expect(rows[0]!.first_scan_id).toBe(first.scanId);

    // The same scan recorded again (a redelivered completion) changes nothing and writes no event.
    const before = await findingEvents(projectId);
    await scan(teamId, projectId, [result('idle', 'i-b'), result('oversized', 'i-d')], third.scanId);
    expect(await findingEvents(projectId)).toEqual(before);

    expect(before).toEqual(
      [
        ['created', a, 'open'],
        ['created', b, 'open'],
        ['created', c, 'open'],
        ['updated', c, 'suppressed'],
        ['updated', a, 'open'], // severity and savings changed
        ['resolved', b, 'resolved'],
        ['updated', b, 'open'], // reopened
        ['created', d, 'open'],
        ['resolved', a, 'resolved'],
      ].sort(sameScanOrder(before)),
    );
  });

  it('counts a rule reporting one resource twice once, and keeps findings per project', async () => {
    const teamId = newId('team');
    const [p1, p2] = [newId('project'), newId('project')];
    const { findingsCount } = await scan(teamId, p1, [
      result('idle', 'i-1'),
      result('idle', 'i-1'),
      result('idle', 'i-2'),
    ]);
    expect(findingsCount).toBe(2);
    await scan(teamId, p2, [result('idle', 'i-1')]);
    // A scan of p2 resolves nothing of p1.
    await scan(teamId, p2, []);
    const open = await client.listFindings({ projectId: p1, status: 'open' }, { teamId });
    expect(open.findings.map((f) => f.resourceId).sort()).toEqual(['i-1', 'i-2']);
    expect((await client.listFindings({ projectId: p2 }, { teamId })).findings.map((f) => f.status)).toEqual([
      'resolved',
    ]);
  });
});

/**
 * Events of one recording come created/updated first, then resolved; within a kind in statement
 * order. Sorting the expectation by the written order's position keeps the test about which events
 * and how many, while the written order is checked per scan by the positions themselves.
 */
function sameScanOrder(written: unknown[][]) {
  const key = (e: unknown[]) => JSON.stringify(e);
  const position = new Map(written.map((e, i) => [key(e), i]));
  return (x: unknown[], y: unknown[]) => (position.get(key(x)) ?? -1) - (position.get(key(y)) ?? -1);
}

describe('recordFindings: how a scan resolved a finding', () => {
  it('notes whether the resolving scan still read cost of the resource; reopening forgets it', async () => {
    const teamId = newId('team');
    const projectId = newId('project');
    const withResource = async (resourceId: string) =>
      (
        await db.query<{ status: string; resolved_with_resource: boolean | null }>(
          'SELECT status, resolved_with_resource FROM findings WHERE team_id = $1 AND resource_id = $2',
          [teamId, resourceId],
        )
      ).rows[0];
    const record = (results: RuleResult[], resourceIds?: string[]) =>
      db.transaction((tx) =>
        recordFindings(tx, deps, { teamId, projectId, scanId: newId('scan'), results, resourceIds }),
      );
    await record([result('idle', 'i-kept'), result('idle', 'i-gone'), result('idle', 'i-unknown')]);
    // The next scan reports none: i-kept is still among its resources (dealt with), i-gone is not.
    await record([result('idle', 'i-unknown')], ['i-kept', 'i-other']);
    expect(await withResource('i-kept')).toEqual({ status: 'resolved', resolved_with_resource: true });
    expect(await withResource('i-gone')).toEqual({ status: 'resolved', resolved_with_resource: false });
    expect(await withResource('i-unknown')).toEqual({ status: 'open', resolved_with_resource: null });
    // A scan that does not say which resources it read resolves without the resource.
    await record([]);
    expect(await withResource('i-unknown')).toEqual({ status: 'resolved', resolved_with_resource: false });
    // Seen again: open, and the note of how it was resolved is gone.
    await record([result('idle', 'i-kept')], ['i-kept']);
    expect(await withResource('i-kept')).toEqual({ status: 'open', resolved_with_resource: null });
  });
});

describe('ListFindings', () => {
  const teamId = newId('team');
  const ctx = { teamId };
  const projectId = newId('project');
  const otherProject = newId('project');
  let scan1: string;
  let scan2: string;

  beforeAll(async () => {
    scan1 = (
      await scan(teamId, projectId, [
        result('idle', 'r-1', { severity: 'low' }),
        result('idle', 'r-2', { severity: 'critical' }),
        result('untagged', 'r-3', { severity: 'medium' }),
      ])
    ).scanId;
    scan2 = (
      await scan(teamId, otherProject, [
        result('idle', 'r-4', { severity: 'critical' }),
        result('untagged', 'r-5', { severity: 'high' }),
      ])
    ).scanId;
    // Another team's findings never show.
    await scan(newId('team'), projectId, [result('idle', 'r-9', { severity: 'critical' })]);
  });

  it('orders most severe first, then newest', async () => {
    const { findings, meta } = await client.listFindings({}, ctx);
    expect(findings.map((f) => f.resourceId)).toEqual(['r-4', 'r-2', 'r-5', 'r-3', 'r-1']);
    expect(meta).toMatchObject({ currentPage: 1, perPage: 25, totalPages: 1, totalCount: 5 });
  });

  // Functions: the scan and project ids exist only once beforeAll ran.
  it.each<[string, () => Filter, string[]]>([
    ['scan_id', () => ({ scanId: scan1 }), ['r-2', 'r-3', 'r-1']],
    ['project_id', () => ({ projectId: otherProject }), ['r-4', 'r-5']],
    ['severity', () => ({ severity: 'critical' }), ['r-4', 'r-2']],
    ['rule_id', () => ({ ruleId: 'untagged' }), ['r-5', 'r-3']],
    ['status', () => ({ status: 'resolved' }), []],
    ['severity and project_id', () => ({ severity: 'critical', projectId }), ['r-2']],
    ['an unknown scan_id', () => ({ scanId: newId('scan') }), []],
  ])('filters by %s', async (_case, request, expected) => {
    const { findings, meta } = await client.listFindings(request(), ctx);
    expect(findings.map((f) => f.resourceId)).toEqual(expected);
    expect(meta!.totalCount).toBe(expected.length);
  });

  it('pages without overlap', async () => {
    const pages = await Promise.all(
      [1, 2, 3, 4].map((page) => client.listFindings({ page: { page, perPage: 2 } }, ctx)),
    );
    expect(pages.map((p) => p.findings.map((f) => f.resourceId))).toEqual([
      ['r-4', 'r-2'],
      ['r-5', 'r-3'],
      ['r-1'],
      [],
    ]);
    expect(pages[2]!.meta).toEqual(
      expect.objectContaining({ currentPage: 3, perPage: 2, totalPages: 3, totalCount: 5 }),
    );
  });

  it.each([
    [{ severity: 'urgent' }, 'severity'],
    [{ status: 'closed' }, 'status'],
    [{ page: { page: 1, perPage: 101 } }, 'per_page'],
    [{ page: { page: -1, perPage: 10 } }, 'page'],
    [{ projectId: 'bad\u0000id' }, 'project_id'],
  ])('refuses %j (400 naming %s)', async (request, field) => {
    const error = await client.listFindings(request, ctx).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(BadRequestError);
    expect((error as BadRequestError).details.map((d) => d.field)).toEqual([field]);
  });

  it("findingsOfScan answers the scan's findings, most severe first, for its team only", async () => {
    expect((await findingsOfScan(db, teamId, scan2)).map((f) => f.resourceId)).toEqual(['r-4', 'r-5']);
    expect(await findingsOfScan(db, newId('team'), scan2)).toEqual([]);
  });
});

describe('UpdateFinding', () => {
  const teamId = newId('team');
  const actor = newId('apiKey');
  const ctx = { teamId, actor };

  /** A finding of the team brought to `status`: suppressed through the API, resolved by a later scan. */
  async function findingIn(status: 'open' | 'suppressed' | 'resolved') {
    const projectId = newId('project');
    await scan(teamId, projectId, [result('idle', 'x')]);
    const id = (await client.listFindings({ projectId }, ctx)).findings[0]!.id;
    if (status === 'suppressed') await client.updateFinding({ id, status, reason: 'known', actor }, ctx);
    if (status === 'resolved') await scan(teamId, projectId, []);
    return { id, projectId };
  }

  const long = 'x'.repeat(501);
  it.each([
    ['open', { status: 'suppressed', reason: 'Accepted risk' }, 'suppressed'],
    ['open', { status: 'suppressed', reason: 'é'.repeat(500) }, 'suppressed'],
    ['suppressed', { status: 'open' }, 'open'],
    ['open', { status: 'open' }, 409],
    ['suppressed', { status: 'suppressed', reason: 'again' }, 409],
    ['resolved', { status: 'open' }, 409],
    ['resolved', { status: 'suppressed', reason: 'late' }, 409],
    ['open', { status: 'suppressed' }, ['reason']],
    ['open', { status: 'suppressed', reason: '' }, ['reason']],
    ['open', { status: 'suppressed', reason: '   ' }, ['reason']],
    ['open', { status: 'suppressed', reason: long }, ['reason']],
    ['open', { status: 'suppressed', reason: 'bad\u0007' }, ['reason']],
    ['suppressed', { status: 'open', reason: 'why' }, ['reason']],
    ['open', { status: 'resolved' }, ['status']],
    ['open', { status: '' }, ['status']],
  ] as const)('%s + %j → %j', async (from, body, expected) => {
    const { id, projectId } = await findingIn(from);
    const before = (await client.listFindings({ projectId }, ctx)).findings[0]!;
    const eventsBefore = await findingEvents(projectId);
    const call = client.updateFinding({ id, actor, ...body }, ctx);
    if (typeof expected === 'string') {
      const updated = await call;
      expect(updated.status).toBe(expected);
      expect(updated.suppressionReason).toBe(expected === 'suppressed' ? body.reason : undefined);
      expect(timestampDate(updated.updatedAt!).getTime()).toBeGreaterThanOrEqual(
        timestampDate(before.updatedAt!).getTime(),
      );
      const { rows } = await db.query('SELECT suppressed_by FROM findings WHERE id = $1', [id]);
      expect(rows[0]).toEqual({ suppressed_by: expected === 'suppressed' ? actor : null });
      expect((await findingEvents(projectId)).slice(eventsBefore.length)).toEqual([
        ['updated', id, expected],
      ]);
      return;
    }
    const error = await call.catch((e: unknown) => e);
    if (expected === 409) {
      expect(error).toBeInstanceOf(ConflictError);
      expect((error as ConflictError).message).toContain(`is ${from}`);
    } else {
      expect(error).toBeInstanceOf(ValidationError);
      expect((error as ValidationError).details.map((d) => d.field)).toEqual(expected);
    }
    expect((await client.listFindings({ projectId }, ctx)).findings[0]).toEqual(before);
    expect(await findingEvents(projectId)).toEqual(eventsBefore);
  });

  it("answers 404 for another team's finding, an unknown id and a malformed one", async () => {
    const { id, projectId } = await findingIn('open');
    for (const [otherId, otherCtx] of [
      [id, { teamId: newId('team'), actor }],
      [newId('finding'), ctx],
      ['not-a-finding', ctx],
    ] as const) {
      const error = await client
        .updateFinding({ id: otherId, status: 'suppressed', reason: 'x', actor }, otherCtx)
        .catch((e: unknown) => e);
      expect(error).toBeInstanceOf(NotFoundError);
    }
    expect((await client.listFindings({ projectId }, ctx)).findings[0]!.status).toBe('open');
  });
});

describe('ListRules', () => {
  it('answers the whole catalogue without a team', async () => {
    const { rules } = await client.listRules({}, {});
    expect(rules.map((rule) => rule.id)).toEqual(allRules.map((rule) => rule.id));
    expect(rules[0]).toEqual(
      expect.objectContaining({
        id: allRules[0]!.id,
        severity: allRules[0]!.severity,
        category: allRules[0]!.category,
        title: allRules[0]!.title,
        description: allRules[0]!.description,
        recommendation: allRules[0]!.recommendation,
      }),
    );
  });
});

describe('purge on budgets.project.deleted', () => {
  it("removes the deleted project's findings only, once, even when the event arrives twice", async () => {
    const teamId = newId('team');
    const [doomed, kept] = [newId('project'), newId('project')];
    await scan(teamId, doomed, [result('idle', 'a'), result('idle', 'b')]);
    await scan(teamId, kept, [result('idle', 'a')]);
    const event: CloudEvent = {
      specversion: '1.0',
      id: newId('event'),
      source: 'budgets',
      type: 'budgets.project.deleted',
      subject: doomed,
      time: new Date().toISOString(),
      datacontenttype: 'application/json',
      data: encodePayload(
        events.ProjectDeletedSchema,
        create(events.ProjectDeletedSchema, { projectId: doomed, teamId }),
      ),
    };
    await bus.publish(event);
    await bus.publish(event);
    await eventually(async () => {
      const { rows } = await db.query('SELECT 1 FROM inbox WHERE event_id = $1', [event.id]);
      return rows.length > 0 ? true : undefined;
    });
    expect((await client.listFindings({ projectId: doomed }, { teamId })).findings).toEqual([]);
    expect((await client.listFindings({ projectId: kept }, { teamId })).findings).toHaveLength(1);
  });
});

import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { scanner } from '@costgov/contracts';
import type { Db } from '@costgov/db';
import { NotFoundError } from '@costgov/errors';
import type { RpcClient } from '@costgov/rpc';
import { startServiceUnderTest, type ServiceUnderTest } from '@costgov/testing';
import { scannerModule } from '../src/module';
import { postureFactory } from '../src/posture/posture';
import { SCORING_VERSION } from '../src/posture/score';
import type { PostureSources, TagCoverage } from '../src/posture/sources';

const TEAM = 'team_a';
const OTHER = 'team_b';

/** What the stand-ins answer: projects per team, budget counts per scope, required tags, coverage. */
const world = {
  projects: new Map<string, Map<string, string[]>>(),
  teamConnections: new Map<string, string[]>(),
  budgets: new Map<string, { active: number; breached: number }>(),
  requiredTags: new Map<string, string[]>(),
  coverage: { ratio: 1, measured: true, untaggable: [] } as TagCoverage,
  coverageQueries: [] as Array<{ connectionIds: string[]; requiredTags: string[]; from: Date; to: Date }>,
};

const sources: PostureSources = {
  async projectConnections(teamId, projectId) {
    const connections = world.projects.get(teamId)?.get(projectId);
    if (!connections) throw new NotFoundError('Project', projectId);
    return connections;
  },
  teamConnections: async (teamId) => world.teamConnections.get(teamId) ?? [],
  budgetCounts: async (teamId, projectId) =>
    world.budgets.get(`${teamId}/${projectId ?? ''}`) ?? { active: 0, breached: 0 },
  requiredTags: async (teamId) => world.requiredTags.get(teamId) ?? [],
  async tagCoverage(query) {
    world.coverageQueries.push(query);
    return world.coverage;
  },
};

let db: Db;
let posture: ServiceUnderTest<{ posture: typeof scanner.PostureService }>;
let client: RpcClient<typeof scanner.PostureService>;
const clock = { now: new Date('2026-11-10T09:00:00Z') };
let findingNo = 0;

/**
 * A finding first raised at `createdAt` (the test clock's now by default). A resolved one was resolved
 * by a scan at `resolvedAt` (the clock's now by default), which read cost of its resource when
 * `withResource` (true by default; null: resolved before that was recorded).
 */
async function addFinding(
  teamId: string,
  projectId: string,
  status: 'open' | 'resolved' | 'suppressed',
  createdAt = clock.now,
  resolved: { resolvedAt?: Date; withResource?: boolean | null } = {},
) {
  findingNo += 1;
  const isResolved = status === 'resolved';
  await db.query(
    `INSERT INTO findings (id, team_id, project_id, scan_id, first_scan_id, rule_id, fingerprint, resource_id,
       resource_type, severity, status, title, description, recommendation, currency, created_at,
       resolved_at, resolved_with_resource)
     VALUES ($1, $2, $3, 'scn_1', 'scn_1', 'rule', $1, 'res', 'vm', 'low', $4, 't', 'd', 'r', 'USD', $5, $6, $7)`,
    [
      `fnd_${findingNo}`,
      teamId,
      projectId,
      status,
      createdAt,
      isResolved ? (resolved.resolvedAt ?? clock.now) : null,
      isResolved ? (resolved.withResource === undefined ? true : resolved.withResource) : null,
    ],
  );
}

let scanNo = 0;
/** A scan of the project that completed at `completedAt` (or ended otherwise). */
async function addScan(
  teamId: string,
  projectId: string,
  completedAt: Date,
  status: 'completed' | 'failed' = 'completed',
) {
  scanNo += 1;
  await db.query(
    `INSERT INTO scans (id, team_id, project_id, status, credits_used, completed_at, created_at)
     VALUES ($1, $2, $3, $4, 1, $5, $5)`,
    [`scn_${scanNo}`, teamId, projectId, status, completedAt],
  );
}

/** Points of a part as the posture rule states it: its weight times the share. */
const points = (weight: number, part: number, whole: number) => (weight * part) / whole;

beforeAll(async () => {
  posture = await startServiceUnderTest(
    scannerModule({ posture: { sources, sweepIntervalMs: 3_600_000, cacheMs: 0 } }),
    { clients: { posture: scanner.PostureService }, now: () => clock.now },
  );
  ({ db } = posture);
  client = posture.clients.posture;
});

afterAll(() => posture?.stop());

beforeEach(async () => {
  clock.now = new Date('2026-11-10T09:00:00Z');
  world.projects = new Map([
    [
      TEAM,
      new Map([
        ['prj_a', ['con_1']],
        ['prj_empty', []],
      ]),
    ],
    [OTHER, new Map([['prj_b', ['con_9']]])],
  ]);
  world.teamConnections = new Map([[TEAM, ['con_1', 'con_2']]]);
  world.budgets = new Map();
  world.requiredTags = new Map();
  world.coverage = { ratio: 1, measured: true, untaggable: [] };
  world.coverageQueries = [];
  await db.query('DELETE FROM findings');
  await db.query('DELETE FROM scans');
  await db.query('DELETE FROM posture_snapshots');
});

describe('cost posture', () => {
  it('a team with nothing to measure leaves every part out: 0 of 0, no grade, stable, today', async () => {
    const posture = await client.getCostPosture({ date: '' }, { teamId: TEAM });
    expect(posture).toMatchObject({ score: 0, maxScore: 0, grade: '', trend: 'stable', date: '2026-11-10' });
    const { budgetCompliance, tagCoverage, recommendationAdoption } = posture.breakdown!;
    expect([budgetCompliance, tagCoverage, recommendationAdoption]).toEqual([
      undefined,
      undefined,
      undefined,
    ]);
    // No required tag: costs is not asked.
    expect(world.coverageQueries).toEqual([]);
  });

  it('the first scan adds recommendation adoption to the posture instead of lowering a full score', async () => {
    world.budgets.set(`${TEAM}/prj_a`, { active: 3, breached: 0 });
    const before = await client.getCostPosture({ projectId: 'prj_a', date: '' }, { teamId: TEAM });
    expect(before).toMatchObject({ score: 40, maxScore: 40, grade: 'A' });
    expect(before.breakdown!.recommendationAdoption).toBeUndefined();

    // A scan completes and raises 4 findings; 1 is resolved.
    await addScan(TEAM, 'prj_a', clock.now);
    for (const status of ['resolved', 'open', 'open', 'open'] as const)
      await addFinding(TEAM, 'prj_a', status);
    const after = await client.getCostPosture({ projectId: 'prj_a', date: '' }, { teamId: TEAM });
    const adoption = Math.round(points(30, 1, 4));
    expect(after.breakdown).toMatchObject({ budgetCompliance: 40, recommendationAdoption: adoption });
    expect(after).toMatchObject({ score: 40 + adoption, maxScore: 40 + 30 });
    // 48 of 70 is 68.6 %: D.
    expect((40 + adoption) / 70).toBeGreaterThanOrEqual(0.6);
    expect((40 + adoption) / 70).toBeLessThan(0.7);
    expect(after.grade).toBe('D');
  });

  it('adoption counts every finding open in the 30 days up to the day; what a scan lost sight of counts neither way', async () => {
    const day = (text: string) => new Date(`${text}Z`);
    // The window of 2026-11-10 is [2026-10-12, 2026-11-11). Each planted finding says how the rule
    // counts it: adopted (dealt with), against (open in the window), or neither.
    const planted: Array<{
      status: 'open' | 'resolved' | 'suppressed';
      created: string;
      resolvedAt?: string;
      withResource?: boolean | null;
      projectId?: string;
      counts: 'adopted' | 'against' | 'neither';
    }> = [
      // An old open backlog is open in the window.
      { status: 'open', created: '2026-06-01T00:00:00', counts: 'against' },
      { status: 'open', created: '2026-10-11T23:59:59', counts: 'against' },
      { status: 'open', created: '2026-11-10T08:00:00', counts: 'against' },
      // A person's suppression stands, however old.
      { status: 'suppressed', created: '2026-08-01T00:00:00', counts: 'adopted' },
      { status: 'suppressed', created: '2026-11-01T00:00:00', counts: 'adopted' },
      // Resolved in the window by a scan that still read cost of the resource: dealt with.
      {
        status: 'resolved',
        created: '2026-09-15T00:00:00',
        resolvedAt: '2026-10-20T00:00:00',
        counts: 'adopted',
      },
      {
        status: 'resolved',
        created: '2026-10-12T00:00:00',
        resolvedAt: '2026-10-12T00:00:00',
        counts: 'adopted',
      },
      // Resolved before the window: not open in it.
      {
        status: 'resolved',
        created: '2026-09-01T00:00:00',
        resolvedAt: '2026-10-11T23:59:59',
        counts: 'neither',
      },
      // Resolved because the scan no longer read the resource (or unknown, from before that was kept).
      {
        status: 'resolved',
        created: '2026-10-15T00:00:00',
        resolvedAt: '2026-10-25T00:00:00',
        withResource: false,
        counts: 'neither',
      },
      {
        status: 'resolved',
        created: '2026-10-15T00:00:00',
        resolvedAt: '2026-10-25T00:00:00',
        withResource: null,
        counts: 'neither',
      },
      // Another project's finding.
      { status: 'open', created: '2026-11-01T00:00:00', projectId: 'prj_other', counts: 'neither' },
    ];
    for (const finding of planted)
      await addFinding(TEAM, finding.projectId ?? 'prj_a', finding.status, day(finding.created), {
        resolvedAt: finding.resolvedAt ? day(finding.resolvedAt) : undefined,
        withResource: finding.withResource,
      });
    const adopted = planted.filter((finding) => finding.counts === 'adopted').length;
    const counted = adopted + planted.filter((finding) => finding.counts === 'against').length;

    // No scan in the window, yet findings open in it: measured.
    const posture = await client.getCostPosture({ projectId: 'prj_a', date: '' }, { teamId: TEAM });
    const expected = Math.round(points(30, adopted, counted));
    expect(posture.breakdown!.recommendationAdoption).toBe(expected);
    expect(posture).toMatchObject({ score: expected, maxScore: 30 });
  });

  it('adoption is left out when nothing was open in the window and no scan completed in it', async () => {
    const day = (text: string) => new Date(`${text}Z`);
    // Resolved before the window, or for want of the resource: nothing to count.
    await addFinding(TEAM, 'prj_a', 'resolved', day('2026-09-01T00:00:00'), {
      resolvedAt: day('2026-10-01T00:00:00'),
    });
    await addFinding(TEAM, 'prj_a', 'resolved', day('2026-10-20T00:00:00'), {
      resolvedAt: day('2026-10-25T00:00:00'),
      withResource: false,
    });
    const nothing = await client.getCostPosture({ projectId: 'prj_a', date: '' }, { teamId: TEAM });
    expect(nothing.breakdown!.recommendationAdoption).toBeUndefined();

    await addScan(TEAM, 'prj_a', day('2026-10-20T00:00:00'), 'failed');
    await addScan(TEAM, 'prj_other', day('2026-10-20T00:00:00'));
    const otherProject = await client.getCostPosture({ projectId: 'prj_a', date: '' }, { teamId: TEAM });
    // A failed scan, or another project's scan, looked at nothing of this project.
    expect(otherProject.breakdown!.recommendationAdoption).toBeUndefined();
    // Team-wide, prj_other's scan completed in the window with nothing to count: full marks.
    const teamWide = await client.getCostPosture({ date: '' }, { teamId: TEAM });
    expect(teamWide).toMatchObject({ score: 30, maxScore: 30, grade: 'A' });
  });

  it('tag coverage is left out without taggable cost in the window, and says what could not carry tags', async () => {
    world.requiredTags.set(TEAM, ['Environment']);
    world.budgets.set(`${TEAM}/`, { active: 1, breached: 0 });
    world.coverage = { ratio: 1, measured: false, untaggable: [{ currency: 'USD', amount: 42.5 }] };
    const onlyTax = await client.getCostPosture({ date: '' }, { teamId: TEAM });
    expect(onlyTax.breakdown!.tagCoverage).toBeUndefined();
    expect(onlyTax).toMatchObject({ score: 40, maxScore: 40, grade: 'A' });
    expect(onlyTax.untaggableSpend).toMatchObject([{ currency: 'USD', amount: 42.5 }]);

    world.coverage = { ratio: 0.8, measured: true, untaggable: [{ currency: 'USD', amount: 42.5 }] };
    const measured = await client.getCostPosture({ date: '' }, { teamId: TEAM });
    expect(measured.breakdown!.tagCoverage).toBe(Math.round(points(30, 0.8, 1)));
    expect(measured).toMatchObject({ score: 40 + 24, maxScore: 70, grade: 'A' });
    // Kept with the day's snapshot.
    clock.now = new Date('2026-11-11T09:00:00Z');
    const past = await client.getCostPosture({ date: '2026-11-10' }, { teamId: TEAM });
    expect(past).toMatchObject({ score: 64, maxScore: 70 });
    expect(past.untaggableSpend).toMatchObject([{ currency: 'USD', amount: 42.5 }]);
  });

  it('team-wide counts every budget, connection and finding of the team; a project only its own', async () => {
    world.budgets.set(`${TEAM}/`, { active: 1, breached: 3 });
    world.budgets.set(`${TEAM}/prj_a`, { active: 1, breached: 0 });
    world.requiredTags.set(TEAM, ['env', 'owner']);
    world.coverage = { ratio: 0.5, measured: true, untaggable: [] };
    await addFinding(TEAM, 'prj_a', 'resolved');
    await addFinding(TEAM, 'prj_a', 'suppressed');
    await addFinding(TEAM, 'prj_other', 'open');
    await addFinding(TEAM, 'prj_other', 'open');
    await addFinding(OTHER, 'prj_b', 'open');

    const team = await client.getCostPosture({ date: '' }, { teamId: TEAM });
    expect(team.breakdown).toMatchObject({
      budgetCompliance: points(40, 1, 4),
      tagCoverage: points(30, 0.5, 1),
      recommendationAdoption: points(30, 2, 4),
    });
    expect(team).toMatchObject({ score: 10 + 15 + 15, maxScore: 100, grade: 'F' });
    expect(world.coverageQueries[0]).toMatchObject({
      connectionIds: ['con_1', 'con_2'],
      requiredTags: ['env', 'owner'],
      // The 30 days up to and including the posture's day.
      from: new Date('2026-10-12T00:00:00Z'),
      to: new Date('2026-11-11T00:00:00Z'),
    });

    const project = await client.getCostPosture({ projectId: 'prj_a', date: '2026-11-10' }, { teamId: TEAM });
    expect(project.breakdown).toMatchObject({
      budgetCompliance: points(40, 1, 1),
      tagCoverage: points(30, 0.5, 1),
      recommendationAdoption: points(30, 2, 2),
    });
    expect(project.score).toBe(40 + 15 + 30);
    expect(project.grade).toBe('B');
    expect(world.coverageQueries[1]!.connectionIds).toEqual(['con_1']);

    // A project without connections has no cost to tag: left out, and costs is not asked.
    const empty = await client.getCostPosture({ projectId: 'prj_empty', date: '' }, { teamId: TEAM });
    expect(empty.breakdown!.tagCoverage).toBeUndefined();
    expect(world.coverageQueries).toHaveLength(2);
  });

  it('another team’s project and an unknown one are 404, today and in the past', async () => {
    for (const date of ['', '2026-11-01']) {
      for (const projectId of ['prj_b', 'prj_nope']) {
        await expect(client.getCostPosture({ projectId, date }, { teamId: TEAM })).rejects.toMatchObject({
          code: 'not_found',
        });
      }
    }
    const { rows } = await db.query('SELECT * FROM posture_snapshots');
    expect(rows).toEqual([]);
  });

  it('a future, malformed or impossible date is a bad request and stores nothing', async () => {
    for (const date of ['2026-11-11', '2026-11-10T00:00:00Z', '10/11/2026', '2026-02-30']) {
      await expect(client.getCostPosture({ date }, { teamId: TEAM })).rejects.toMatchObject({
        code: 'bad_request',
      });
    }
    const { rows } = await db.query('SELECT * FROM posture_snapshots');
    expect(rows).toEqual([]);
  });

  it('the read of today stores today’s snapshot; a past day answers from it, and 404 without one', async () => {
    world.budgets.set(`${TEAM}/`, { active: 1, breached: 1 });
    await addScan(TEAM, 'prj_a', clock.now);
    // Budgets 20 of 40, a clean scan 30 of 30: 50 of 70.
    expect((await client.getCostPosture({ date: '' }, { teamId: TEAM })).score).toBe(50);
    await expect(client.getCostPosture({ date: '2026-11-09' }, { teamId: TEAM })).rejects.toMatchObject({
      code: 'not_found',
    });

    clock.now = new Date('2026-11-11T10:00:00Z');
    world.budgets.set(`${TEAM}/`, { active: 0, breached: 2 });
    expect((await client.getCostPosture({ date: '' }, { teamId: TEAM })).score).toBe(30);
    const past = await client.getCostPosture({ date: '2026-11-10' }, { teamId: TEAM });
    // 50 of 70 is 71.4 %: C.
    expect(past).toMatchObject({ score: 50, maxScore: 70, grade: 'C', date: '2026-11-10' });
    expect(past.breakdown).toMatchObject({ budgetCompliance: 20, recommendationAdoption: 30 });
    expect(past.breakdown!.tagCoverage).toBeUndefined();
    // Team-wide and project snapshots are apart.
    await expect(
      client.getCostPosture({ projectId: 'prj_a', date: '2026-11-10' }, { teamId: TEAM }),
    ).rejects.toMatchObject({ code: 'not_found' });
    // Another team has no history of ours.
    await expect(client.getCostPosture({ date: '2026-11-10' }, { teamId: OTHER })).rejects.toMatchObject({
      code: 'not_found',
    });
  });

  it('today’s snapshot is rewritten only when the posture changed', async () => {
    const takenAt = async () =>
      (
        await db.query<{ taken_at: Date }>('SELECT taken_at FROM posture_snapshots WHERE team_id = $1', [
          TEAM,
        ])
      ).rows[0]!.taken_at.toISOString();
    await client.getCostPosture({ date: '' }, { teamId: TEAM });
    clock.now = new Date('2026-11-10T10:00:00Z');
    await client.getCostPosture({ date: '' }, { teamId: TEAM });
    expect(await takenAt()).toBe('2026-11-10T09:00:00.000Z');
    world.budgets.set(`${TEAM}/`, { active: 0, breached: 1 });
    clock.now = new Date('2026-11-10T11:00:00Z');
    expect(await client.getCostPosture({ date: '' }, { teamId: TEAM })).toMatchObject({
      score: 0,
      maxScore: 40,
    });
    expect(await takenAt()).toBe('2026-11-10T11:00:00.000Z');
  });

  it('trend compares with the snapshot of seven days earlier (under 3 points is stable)', async () => {
    // Every part measured (a clean scan in the window, full tag coverage): out of 100.
    world.budgets.set(`${TEAM}/`, { active: 1, breached: 1 });
    world.requiredTags.set(TEAM, ['env']);
    await addScan(TEAM, 'prj_a', clock.now);
    expect((await client.getCostPosture({ date: '' }, { teamId: TEAM })).score).toBe(80);

    const readOn = async (day: string, active: number, breached: number) => {
      clock.now = new Date(`${day}T12:00:00Z`);
      world.budgets.set(`${TEAM}/`, { active, breached });
      return client.getCostPosture({ date: '' }, { teamId: TEAM });
    };
    // Six days later there is no snapshot seven days earlier.
    expect(await readOn('2026-11-16', 0, 1)).toMatchObject({ score: 60, trend: 'stable' });
    // 2026-11-10 scored 80: 100 is improving, 60 declining, 78 (39 budget points) stable.
    expect(await readOn('2026-11-17', 1, 0)).toMatchObject({ score: 100, trend: 'improving' });
    expect(await readOn('2026-11-17', 0, 1)).toMatchObject({ score: 60, trend: 'declining' });
    expect(await readOn('2026-11-17', 39, 1)).toMatchObject({ score: 99, trend: 'improving' });
    world.coverage = { ratio: 0.94, measured: true, untaggable: [] };
    // 20 + 28.2 + 30 = 78.2 -> 78 against 80: stable.
    expect(await readOn('2026-11-17', 1, 1)).toMatchObject({ score: 78, trend: 'stable' });
    // A past day's trend is against its own seven days earlier.
    clock.now = new Date('2026-11-24T12:00:00Z');
    expect(await client.getCostPosture({ date: '2026-11-17' }, { teamId: TEAM })).toMatchObject({
      score: 78,
      trend: 'stable',
    });

    // Without budgets on 2026-11-24: 28 + 30 of 60 (96.7 %) against 78 of 100 on 2026-11-17.
    expect(await readOn('2026-11-24', 0, 0)).toMatchObject({ score: 58, maxScore: 60, trend: 'improving' });
  });

  it('a snapshot taken before parts could be left out is not compared with today’s: stable', async () => {
    // A snapshot of the old rule (every part scored, no version) seven days before 2026-11-10: 100 of
    // 100, every part full marks; it would make any posture of today's rule under 97 % a decline.
    const oldRule = { budgetCompliance: 40, tagCoverage: 30, recommendationAdoption: 30 };
    const plant = (day: string, breakdown: object) =>
      db.query(
        `INSERT INTO posture_snapshots (team_id, project_id, date, score, breakdown, taken_at)
         VALUES ($1, '', $2, $3, $4, $5)`,
        [TEAM, day, 100, JSON.stringify(breakdown), new Date(`${day}T12:00:00Z`)],
      );
    await plant('2026-11-03', oldRule);
    // Today: budgets 20 of 40 (one of two breached), nothing else measured.
    world.budgets.set(`${TEAM}/`, { active: 1, breached: 1 });
    const today = await client.getCostPosture({ date: '' }, { teamId: TEAM });
    expect(today).toMatchObject({ score: points(40, 1, 2), maxScore: 40, trend: 'stable' });
    // The old snapshot still answers for its own day, as it was scored.
    expect(await client.getCostPosture({ date: '2026-11-03' }, { teamId: TEAM })).toMatchObject({
      score: 100,
      maxScore: 100,
      grade: 'A',
    });

    // The same breakdown stored by today's rule seven days earlier is compared: a decline.
    await db.query(`DELETE FROM posture_snapshots WHERE date = '2026-11-03'`);
    await plant('2026-11-03', { ...oldRule, untaggableSpend: [], version: SCORING_VERSION });
    expect(await client.getCostPosture({ date: '' }, { teamId: TEAM })).toMatchObject({ trend: 'declining' });
    // Today's snapshot keeps the rule that scored it.
    const { rows } = await db.query<{ breakdown: { version?: number } }>(
      `SELECT breakdown FROM posture_snapshots WHERE team_id = $1 AND date = '2026-11-10'`,
      [TEAM],
    );
    expect(rows[0]!.breakdown.version).toBe(SCORING_VERSION);
  });

  it('the sweep takes today’s snapshot of every scope asked for lately that has none, and skips gone projects', async () => {
    const posture = postureFactory({ db, now: () => clock.now, sources });
    world.budgets.set(`${TEAM}/`, { active: 1, breached: 0 });
    world.budgets.set(`${TEAM}/prj_a`, { active: 2, breached: 0 });
    await client.getCostPosture({ date: '' }, { teamId: TEAM });
    await client.getCostPosture({ projectId: 'prj_a', date: '' }, { teamId: TEAM });
    expect(await posture.snapshotDue()).toBe(0);

    clock.now = new Date('2026-11-11T00:30:00Z');
    world.projects.get(TEAM)!.delete('prj_a');
    world.budgets.set(`${TEAM}/`, { active: 0, breached: 1 });
    expect(await posture.snapshotDue()).toBe(1);
    const { rows } = await db.query<{ project_id: string; date: string; score: number }>(
      `SELECT project_id, to_char(date, 'YYYY-MM-DD') AS date, score FROM posture_snapshots ORDER BY date, project_id`,
    );
    expect(rows).toEqual([
      { project_id: '', date: '2026-11-10', score: 40 },
      { project_id: 'prj_a', date: '2026-11-10', score: 40 },
      { project_id: '', date: '2026-11-11', score: 0 },
    ]);
    // Reading yesterday now answers from the sweep's history.
    clock.now = new Date('2026-11-12T08:00:00Z');
    expect(await client.getCostPosture({ date: '2026-11-11' }, { teamId: TEAM })).toMatchObject({
      score: 0,
      maxScore: 40,
      grade: 'F',
    });
  });
});

describe('today’s posture reused for cacheMs', () => {
  it('answers a read within cacheMs from the first, recomputes after it, and never reuses another day or scope', async () => {
    const counted = { budgetCalls: 0 };
    const counting: PostureSources = {
      ...sources,
      budgetCounts: async (teamId, projectId) => {
        counted.budgetCalls += 1;
        return sources.budgetCounts(teamId, projectId);
      },
    };
    const posture = postureFactory({ db, now: () => clock.now, sources: counting, cacheMs: 5_000 });
    world.budgets.set(`${TEAM}/`, { active: 2, breached: 0 });
    const first = await posture.getCostPosture(TEAM, {});
    expect(first.breakdown.budgetCompliance).toBe(40);

    // A budget breaches: within 5 s the first answer stands, without asking budgets again.
    world.budgets.set(`${TEAM}/`, { active: 1, breached: 1 });
    clock.now = new Date(clock.now.getTime() + 4_999);
    expect(await posture.getCostPosture(TEAM, {})).toEqual(first);
    expect(counted.budgetCalls).toBe(1);
    // Another scope is computed on its own.
    await posture.getCostPosture(TEAM, { projectId: 'prj_a' });
    expect(counted.budgetCalls).toBe(2);

    clock.now = new Date(clock.now.getTime() + 1);
    const later = await posture.getCostPosture(TEAM, {});
    expect(later.breakdown.budgetCompliance).toBe(20);
    expect(counted.budgetCalls).toBe(3);

    // Past midnight the cached day is not today's any more.
    clock.now = new Date('2026-11-11T00:00:01Z');
    expect((await posture.getCostPosture(TEAM, {})).date).toBe('2026-11-11');
    expect(counted.budgetCalls).toBe(4);
  });
});

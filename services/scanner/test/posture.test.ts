import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { scanner } from '@costgov/contracts';
import type { Db } from '@costgov/db';
import { NotFoundError } from '@costgov/errors';
import type { RpcClient } from '@costgov/rpc';
import { startServiceUnderTest, type ServiceUnderTest } from '@costgov/testing';
import { scannerModule } from '../src/module';
import { postureFactory } from '../src/posture/posture';
import type { PostureSources } from '../src/posture/sources';

const TEAM = 'team_a';
const OTHER = 'team_b';

/** What the stand-ins answer: projects per team, budget counts per scope, required tags, coverage. */
const world = {
  projects: new Map<string, Map<string, string[]>>(),
  teamConnections: new Map<string, string[]>(),
  budgets: new Map<string, { active: number; breached: number }>(),
  requiredTags: new Map<string, string[]>(),
  coverage: 1,
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

async function addFinding(teamId: string, projectId: string, status: 'open' | 'resolved' | 'suppressed') {
  findingNo += 1;
  await db.query(
    `INSERT INTO findings (id, team_id, project_id, scan_id, first_scan_id, rule_id, fingerprint, resource_id,
       resource_type, severity, status, title, description, recommendation, currency)
     VALUES ($1, $2, $3, 'scn_1', 'scn_1', 'rule', $1, 'res', 'vm', 'low', $4, 't', 'd', 'r', 'USD')`,
    [`fnd_${findingNo}`, teamId, projectId, status],
  );
}

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
  world.coverage = 1;
  world.coverageQueries = [];
  await db.query('DELETE FROM findings');
  await db.query('DELETE FROM posture_snapshots');
});

describe('cost posture', () => {
  it('a team with nothing to measure scores full marks, stable, today', async () => {
    const posture = await client.getCostPosture({ date: '' }, { teamId: TEAM });
    expect(posture).toMatchObject({
      score: 100,
      maxScore: 100,
      grade: 'A',
      breakdown: { budgetCompliance: 40, tagCoverage: 30, recommendationAdoption: 30 },
      trend: 'stable',
      date: '2026-11-10',
    });
    // No required tag: costs is not asked.
    expect(world.coverageQueries).toEqual([]);
  });

  it('team-wide counts every budget, connection and finding of the team; a project only its own', async () => {
    world.budgets.set(`${TEAM}/`, { active: 1, breached: 3 });
    world.budgets.set(`${TEAM}/prj_a`, { active: 1, breached: 0 });
    world.requiredTags.set(TEAM, ['env', 'owner']);
    world.coverage = 0.5;
    await addFinding(TEAM, 'prj_a', 'resolved');
    await addFinding(TEAM, 'prj_a', 'suppressed');
    await addFinding(TEAM, 'prj_other', 'open');
    await addFinding(TEAM, 'prj_other', 'open');
    await addFinding(OTHER, 'prj_b', 'open');

    const team = await client.getCostPosture({ date: '' }, { teamId: TEAM });
    expect(team.breakdown).toMatchObject({
      budgetCompliance: 10,
      tagCoverage: 15,
      recommendationAdoption: 15,
    });
    expect(team).toMatchObject({ score: 40, grade: 'F' });
    expect(world.coverageQueries[0]).toMatchObject({
      connectionIds: ['con_1', 'con_2'],
      requiredTags: ['env', 'owner'],
      // The 30 days up to and including the posture's day.
      from: new Date('2026-10-12T00:00:00Z'),
      to: new Date('2026-11-11T00:00:00Z'),
    });

    const project = await client.getCostPosture({ projectId: 'prj_a', date: '2026-11-10' }, { teamId: TEAM });
    expect(project.breakdown).toMatchObject({
      budgetCompliance: 40,
      tagCoverage: 15,
      recommendationAdoption: 30,
    });
    expect(project.score).toBe(85);
    expect(project.grade).toBe('B');
    expect(world.coverageQueries[1]!.connectionIds).toEqual(['con_1']);

    // A project without connections has no cost to tag.
    const empty = await client.getCostPosture({ projectId: 'prj_empty', date: '' }, { teamId: TEAM });
    expect(empty.breakdown!.tagCoverage).toBe(30);
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
    expect((await client.getCostPosture({ date: '' }, { teamId: TEAM })).score).toBe(80);
    await expect(client.getCostPosture({ date: '2026-11-09' }, { teamId: TEAM })).rejects.toMatchObject({
      code: 'not_found',
    });

    clock.now = new Date('2026-11-11T10:00:00Z');
    world.budgets.set(`${TEAM}/`, { active: 0, breached: 2 });
    expect((await client.getCostPosture({ date: '' }, { teamId: TEAM })).score).toBe(60);
    const past = await client.getCostPosture({ date: '2026-11-10' }, { teamId: TEAM });
    expect(past).toMatchObject({ score: 80, grade: 'B', date: '2026-11-10' });
    expect(past.breakdown).toMatchObject({
      budgetCompliance: 20,
      tagCoverage: 30,
      recommendationAdoption: 30,
    });
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
    expect((await client.getCostPosture({ date: '' }, { teamId: TEAM })).score).toBe(60);
    expect(await takenAt()).toBe('2026-11-10T11:00:00.000Z');
  });

  it('trend compares with the snapshot of seven days earlier (under 3 points is stable)', async () => {
    world.budgets.set(`${TEAM}/`, { active: 1, breached: 1 });
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
    world.requiredTags.set(TEAM, ['env']);
    world.coverage = 0.94;
    // 20 + 28.2 + 30 = 78.2 -> 78 against 80: stable.
    expect(await readOn('2026-11-17', 1, 1)).toMatchObject({ score: 78, trend: 'stable' });
    // A past day's trend is against its own seven days earlier.
    clock.now = new Date('2026-11-24T12:00:00Z');
    expect(await client.getCostPosture({ date: '2026-11-17' }, { teamId: TEAM })).toMatchObject({
      score: 78,
      trend: 'stable',
    });
  });

  it('the sweep takes today’s snapshot of every scope asked for lately that has none, and skips gone projects', async () => {
    const posture = postureFactory({ db, now: () => clock.now, sources });
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
      { project_id: '', date: '2026-11-10', score: 100 },
      { project_id: 'prj_a', date: '2026-11-10', score: 100 },
      { project_id: '', date: '2026-11-11', score: 60 },
    ]);
    // Reading yesterday now answers from the sweep's history.
    clock.now = new Date('2026-11-12T08:00:00Z');
    expect(await client.getCostPosture({ date: '2026-11-11' }, { teamId: TEAM })).toMatchObject({
      score: 60,
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

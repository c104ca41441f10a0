import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { identity } from '@costgov/contracts';
import { createRpcClient } from '@costgov/rpc';
import { eventually } from '@costgov/testing';
import type { RunningSystem } from '../src/system';
import { expectError, restCaller, startRestSystem } from './support/rest';

const bootstrapKey = 'cg_live_restposturebootstrapkey0000000000000';
const call = restCaller(() => system.url, bootstrapKey);
let system: RunningSystem;
let teamId: string;
let otherTeamKey: string;
let readOnlyKey: string;

const today = () => new Date().toISOString().slice(0, 10);
const dayFromToday = (days: number) => new Date(Date.now() + days * 86_400_000).toISOString().slice(0, 10);

beforeAll(async () => {
  // Each read must see the change just made: today's posture is not reused here (posture.test.ts tests that).
  ({ system, teamId, otherTeamKey, readOnlyKey } = await startRestSystem(bootstrapKey, {
    env: { POSTURE_CACHE_MS: '0' },
  }));
});

afterAll(() => system?.stop());

async function created(path: string, body: unknown): Promise<string> {
  const reply = await call('POST', path, { body });
  expect(reply.status, reply.text).toBe(201);
  return reply.body.data.id;
}

/** Identity over gRPC, as the CLI sets a team's required tag keys and grants scan credits. */
async function withIdentity(
  use: (client: ReturnType<typeof identityClientOf>) => Promise<unknown>,
): Promise<void> {
  const client = identityClientOf();
  try {
    await use(client);
  } finally {
    client.close();
  }
}
const identityClientOf = () =>
  createRpcClient(
    identity.IdentityService,
    `127.0.0.1:${system.services.find((s) => s.name === 'identity')!.port}`,
  );

interface Line {
  cost: number;
  tags: Record<string, string>;
  /** FOCUS ChargeCategory; Usage by default. */
  category?: 'Usage' | 'Tax' | 'Credit' | 'Purchase' | 'Adjustment';
  /** False for a charge without a ResourceId (a support fee, a tax). */
  resource?: boolean;
}

/** Whether a line's cost can carry tags: a resource's charge of a category other than these four. */
const taggable = (line: Line) =>
  line.resource !== false && !['Tax', 'Credit', 'Purchase', 'Adjustment'].includes(line.category ?? 'Usage');
const costOf = (lines: Line[]) => lines.reduce((sum, line) => sum + line.cost, 0);

/** A FOCUS export of this month with every row charged today: the posture's 30 days hold all of it. */
function focusFile(rows: Line[]): string {
  const now = new Date();
  const start = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), 1));
  const end = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth() + 1, 1));
  const day = new Date(`${today()}T00:00:00Z`);
  const stamp = (d: Date) => d.toISOString().replace('.000Z', 'Z');
  const header =
    'BilledCost,EffectiveCost,BillingCurrency,BillingPeriodStart,BillingPeriodEnd,ChargePeriodStart,ChargePeriodEnd,ServiceName,ResourceId,Tags,ChargeCategory';
  const lines = rows.map(({ cost, tags, category = 'Usage', resource = true }, i) =>
    [
      cost,
      cost,
      'USD',
      stamp(start),
      stamp(end),
      stamp(day),
      stamp(new Date(day.getTime() + 3_600_000)),
      'EC2',
      resource ? `i-${i}` : '',
      `"${JSON.stringify(tags).replaceAll('"', '""')}"`,
      category,
    ].join(','),
  );
  return `${header}\n${lines.join('\n')}\n`;
}

describe('REST /v1/guard/cost-posture through the gateway', () => {
  it('a new team has nothing to measure: every part null, 0 of 0, no grade, readable with guard:read', async () => {
    const reply = await call('GET', '/v1/guard/cost-posture', { key: readOnlyKey });
    expect(reply.status, reply.text).toBe(200);
    expect(reply.body).toEqual({
      data: {
        score: 0,
        max_score: 0,
        grade: null,
        breakdown: { budget_compliance: null, tag_coverage: null, recommendation_adoption: null },
        trend: 'stable',
        date: today(),
        untaggable_spend: [],
      },
    });
    expect(reply.headers.get('x-request-id')).toBeTruthy();
  });

  it('a future or malformed date is 400; an unknown parameter is 400', async () => {
    for (const date of [dayFromToday(2), '2026-1-5', 'yesterday', '2026-02-30', '']) {
      expectError(
        await call('GET', `/v1/guard/cost-posture?date=${encodeURIComponent(date)}`),
        400,
        'bad_request',
      );
    }
    expectError(await call('GET', '/v1/guard/cost-posture?scope=team'), 400, 'bad_request');
  });

  it('a past day without a snapshot is 404; today answers with the same day given or not', async () => {
    expectError(await call('GET', `/v1/guard/cost-posture?date=${dayFromToday(-3)}`), 404, 'not_found');
    const given = await call('GET', `/v1/guard/cost-posture?date=${today()}`);
    expect(given.status, given.text).toBe(200);
    expect(given.body.data.date).toBe(today());
  });

  it('team-wide and project postures from budgets, required tags on cost data, and findings', async () => {
    const connection = await created('/v1/guard/connections', { name: 'aws-posture', provider: 'aws' });
    const tagged = await created('/v1/guard/projects', {
      name: 'posture-tagged',
      connection_ids: [connection],
    });
    const bare = await created('/v1/guard/projects', { name: 'posture-bare' });
    const budget = (projectId: string, name: string, amount: number) =>
      created('/v1/guard/budgets', {
        project_id: projectId,
        name,
        amount,
        currency: 'USD',
        period: 'monthly',
      });
    const small = await budget(tagged, 'small', 50);
    const large = await budget(tagged, 'large', 1000);
    const bareBudget = await budget(bare, 'bare', 1000);

    // Required as `Team`; the file's labels are lower case, as Google Cloud writes them.
    await withIdentity((client) => client.setRequiredTags({ requiredTags: ['Team'] }, { teamId }));
    const lines: Line[] = [
      { cost: 60, tags: { team: 'web' } },
      { cost: 25, tags: { env: 'prod' } },
      { cost: 15, tags: { team: '' } },
      { cost: 40, tags: {}, category: 'Tax', resource: false },
      { cost: 30, tags: {}, resource: false }, // a support fee
      { cost: -10, tags: {}, category: 'Credit', resource: false },
    ];
    const upload = await call('POST', `/v1/guard/connections/${connection}/cost-data`, {
      raw: focusFile(lines),
      contentType: 'text/csv',
    });
    expect(upload.status, upload.text).toBe(200);
    // 160 spent against 50: the small budget breaches once budgets has evaluated the upload.
    await eventually(async () =>
      (await call('GET', `/v1/guard/budgets/${small}`)).body.data.status === 'breached' ? true : undefined,
    );
    // The large budget reads the same data; the bare project's has none in its period.
    await eventually(async () =>
      (await call('GET', `/v1/guard/budgets/${large}`)).body.data.data_through ? true : undefined,
    );
    expect((await call('GET', `/v1/guard/budgets/${bareBudget}`)).body.data.data_through).toBeNull();

    // Tag coverage is a share of the cost that can carry tags; the rest is given apart.
    const canCarry = lines.filter(taggable);
    const covered = costOf(canCarry.filter((line) => line.tags.team?.trim()));
    const tagPoints = (30 * covered) / costOf(canCarry);
    const leftOut = costOf(lines.filter((line) => !taggable(line)));
    const grade = (score: number, max: number) =>
      ['A', 'B', 'C', 'D'].find((_, i) => score * 100 >= (90 - 10 * i) * max) ?? 'F';

    // Project: 1 of 2 budgets fine, its cost tagged, never scanned (left out): out of 70.
    const project = await call('GET', `/v1/guard/cost-posture?project_id=${tagged}`);
    expect(project.status, project.text).toBe(200);
    const projectScore = Math.round((40 * 1) / 2 + tagPoints);
    expect(project.body.data).toMatchObject({
      score: projectScore,
      max_score: 70,
      grade: grade(projectScore, 70),
      breakdown: {
        budget_compliance: 20,
        tag_coverage: Math.round(tagPoints),
        recommendation_adoption: null,
      },
      untaggable_spend: [{ currency: 'USD', amount: leftOut }],
    });
    // A project with no connection has no cost to tag, and its one budget has no data in its period:
    // not breached only because nothing was measured, so left out too. Nothing measured.
    const bareReply = await call('GET', `/v1/guard/cost-posture?project_id=${bare}`);
    expect(bareReply.body.data).toMatchObject({
      score: 0,
      max_score: 0,
      grade: null,
      breakdown: { budget_compliance: null, tag_coverage: null, recommendation_adoption: null },
      untaggable_spend: [],
    });
    // Team-wide: of the budgets with data (the tagged project's two; not the bare one), 1 is fine; the
    // team's one connection as tagged as the project.
    const team = await call('GET', '/v1/guard/cost-posture');
    const teamScore = Math.round((40 * 1) / 2 + tagPoints);
    expect(team.body.data).toMatchObject({
      score: teamScore,
      max_score: 70,
      grade: grade(teamScore, 70),
      breakdown: { budget_compliance: 20, recommendation_adoption: null },
    });
  });

  it('recommendation adoption is the share of the findings of a scan that are suppressed or resolved', async () => {
    const connection = await created('/v1/guard/connections', { name: 'aws-scanned', provider: 'aws' });
    const projectId = await created('/v1/guard/projects', {
      name: 'posture-scanned',
      connection_ids: [connection],
    });
    const upload = await call('POST', `/v1/guard/connections/${connection}/cost-data`, {
      raw: focusFile([
        { cost: 70, tags: { team: 'web' } },
        { cost: 20, tags: { env: 'prod' } },
        { cost: 10, tags: { owner: 'ops' } },
      ]),
      contentType: 'text/csv',
    });
    expect(upload.status, upload.text).toBe(200);
    await withIdentity(async (client) => {
      await client.setRequiredTags({ requiredTags: ['team'] }, { teamId });
      await client.grantScanCredits({ teamId, credits: 5n });
    });
    const scan = await call('POST', '/v1/guard/scans', { body: { project_id: projectId } });
    expect(scan.status, scan.text).toBe(202);
    const done = await eventually(async () => {
      const read = await call('GET', `/v1/guard/scans/${scan.body.data.id}`);
      return ['completed', 'failed'].includes(read.body.data.status) ? read.body.data : undefined;
    });
    expect(done.status, JSON.stringify(done)).toBe('completed');
    const findings = (await call('GET', `/v1/guard/findings?project_id=${projectId}&per_page=100`)).body
      .data as Array<{
      id: string;
    }>;
    // Two untagged resources under a required `team` key: at least those are findings.
    expect(findings.length).toBeGreaterThanOrEqual(2);
    const adoption = async () =>
      (await call('GET', `/v1/guard/cost-posture?project_id=${projectId}`)).body.data.breakdown
        .recommendation_adoption;
    expect(await adoption()).toBe(0);
    const suppressed = await call('PATCH', `/v1/guard/findings/${findings[0]!.id}`, {
      body: { status: 'suppressed', reason: 'accepted for now' },
    });
    expect(suppressed.status, suppressed.text).toBe(200);
    expect(await adoption()).toBe(Math.round(30 / findings.length));
  });

  it("another team's project and an unknown project are 404", async () => {
    const project = await created('/v1/guard/projects', { name: 'posture-mine' });
    expectError(
      await call('GET', `/v1/guard/cost-posture?project_id=${project}`, { key: otherTeamKey }),
      404,
      'not_found',
    );
    expectError(await call('GET', '/v1/guard/cost-posture?project_id=prj_unknown'), 404, 'not_found');
    // The other team's own team-wide posture knows nothing of ours.
    const theirs = await call('GET', '/v1/guard/cost-posture', { key: otherTeamKey });
    expect(theirs.body.data).toMatchObject({ score: 0, max_score: 0, grade: null });
  });
});

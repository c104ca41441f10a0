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

/** A FOCUS export of this month with every row charged today: the posture's 30 days hold all of it. */
function focusFile(rows: Array<{ cost: number; tags: Record<string, string> }>): string {
  const now = new Date();
  const start = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), 1));
  const end = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth() + 1, 1));
  const day = new Date(`${today()}T00:00:00Z`);
  const stamp = (d: Date) => d.toISOString().replace('.000Z', 'Z');
  const header =
    'BilledCost,EffectiveCost,BillingCurrency,BillingPeriodStart,BillingPeriodEnd,ChargePeriodStart,ChargePeriodEnd,ServiceName,ResourceId,Tags';
  const lines = rows.map(({ cost, tags }, i) =>
    [
      cost,
      cost,
      'USD',
      stamp(start),
      stamp(end),
      stamp(day),
      stamp(new Date(day.getTime() + 3_600_000)),
      'EC2',
      `i-${i}`,
      `"${JSON.stringify(tags).replaceAll('"', '""')}"`,
    ].join(','),
  );
  return `${header}\n${lines.join('\n')}\n`;
}

describe('REST /v1/guard/cost-posture through the gateway', () => {
  it('a new team scores full marks today, stable, readable with guard:read', async () => {
    const reply = await call('GET', '/v1/guard/cost-posture', { key: readOnlyKey });
    expect(reply.status, reply.text).toBe(200);
    expect(reply.body).toEqual({
      data: {
        score: 100,
        max_score: 100,
        grade: 'A',
        breakdown: { budget_compliance: 40, tag_coverage: 30, recommendation_adoption: 30 },
        trend: 'stable',
        date: today(),
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
    await budget(tagged, 'large', 1000);
    await budget(bare, 'bare', 1000);

    await withIdentity((client) => client.setRequiredTags({ requiredTags: ['team'] }, { teamId }));
    const upload = await call('POST', `/v1/guard/connections/${connection}/cost-data`, {
      raw: focusFile([
        { cost: 60, tags: { team: 'web' } },
        { cost: 25, tags: { env: 'prod' } },
        { cost: 15, tags: { team: '' } },
      ]),
      contentType: 'text/csv',
    });
    expect(upload.status, upload.text).toBe(200);
    // 100 spent against 50: the small budget breaches once budgets has evaluated the upload.
    await eventually(async () =>
      (await call('GET', `/v1/guard/budgets/${small}`)).body.data.status === 'breached' ? true : undefined,
    );

    // Project: 1 of 2 budgets fine (20), 60 of 100 tagged (18), no finding (30).
    const project = await call('GET', `/v1/guard/cost-posture?project_id=${tagged}`);
    expect(project.status, project.text).toBe(200);
    expect(project.body.data).toMatchObject({
      score: 68,
      grade: 'D',
      breakdown: { budget_compliance: 20, tag_coverage: 18, recommendation_adoption: 30 },
    });
    // A project with no connection has no cost to tag, and its one budget is fine.
    const bareReply = await call('GET', `/v1/guard/cost-posture?project_id=${bare}`);
    expect(bareReply.body.data).toMatchObject({ score: 100, grade: 'A' });
    // Team-wide: 2 of 3 budgets fine (26.67), the team's one connection 60% tagged (18): 74.67 -> 75.
    const team = await call('GET', '/v1/guard/cost-posture');
    expect(team.body.data).toMatchObject({
      score: 75,
      grade: 'C',
      breakdown: { budget_compliance: 27, tag_coverage: 18, recommendation_adoption: 30 },
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
    expect(theirs.body.data.score).toBe(100);
  });
});

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { identity } from '@costgov/contracts';
import { createRpcClient, type RpcClient } from '@costgov/rpc';
import { eventually, focusScenario } from '@costgov/testing';
import type { RunningSystem } from '../src/system';
import { restCaller, startRestSystem } from './support/rest';

const { planted, scenarioCsv, scenarioRows, days } = focusScenario;

const bootstrapKey = 'cg_live_restscanscenariobootstrapkey00000000';
const call = restCaller(() => system.url, bootstrapKey);
const perMonth = 30.44;
let system: RunningSystem;
let teamId: string;
let identityClient: RpcClient<typeof identity.IdentityService>;
let projectId: string;

interface Finding {
  rule_id: string;
  resource_id: string;
  status: string;
  description: string;
  estimated_monthly_savings: number | null;
  projected_from_days: number | null;
}

beforeAll(async () => {
  ({ system, teamId } = await startRestSystem(bootstrapKey));
  const identityPort = system.services.find((s) => s.name === 'identity')!.port;
  identityClient = createRpcClient(identity.IdentityService, `127.0.0.1:${identityPort}`);
  await identityClient.grantScanCredits({ teamId, credits: 2n });
  await identityClient.setRequiredTags({ requiredTags: planted.requiredTags }, { teamId });
  const connection = await call('POST', '/v1/guard/connections', {
    body: { name: 'scenario', provider: 'aws' },
  });
  expect(connection.status, connection.text).toBe(201);
  const upload = await call('POST', `/v1/guard/connections/${connection.body.data.id}/cost-data`, {
    raw: scenarioCsv(),
    contentType: 'text/csv',
  });
  expect(upload.status, upload.text).toBe(200);
  const project = await call('POST', '/v1/guard/projects', {
    body: { name: 'scenario', connection_ids: [connection.body.data.id] },
  });
  expect(project.status, project.text).toBe(201);
  projectId = project.body.data.id;
}, 60_000);

afterAll(async () => {
  identityClient?.close();
  await system?.stop();
});

/** Runs a scan of the project and returns its findings, page by page. */
async function scan(): Promise<Finding[]> {
  const created = await call('POST', '/v1/guard/scans', { body: { project_id: projectId } });
  expect(created.status, created.text).toBe(202);
  const done = await eventually(async () => {
    const read = await call('GET', `/v1/guard/scans/${created.body.data.id}`);
    return ['completed', 'failed'].includes(read.body.data.status) ? read.body.data : undefined;
  });
  expect(done.status).toBe('completed');
  const all: Finding[] = [];
  for (let page = 1; ; page++) {
    const reply = await call('GET', `/v1/guard/findings?scan_id=${done.id}&per_page=100&page=${page}`);
    expect(reply.status, reply.text).toBe(200);
    all.push(...reply.body.data);
    if (page >= reply.body.meta.total_pages) return all;
  }
}

const within15 = (actual: number | null, expected: number) => {
  expect(actual).not.toBeNull();
  expect(Math.abs(actual! - expected) / expected).toBeLessThanOrEqual(0.15);
};

describe('a scan of the scenario file through the REST API', () => {
  it('finds each planted problem with its savings and the days they rest on, and no non-problem', async () => {
    const findings = await scan();
    const find = (rule: string, resource: string) =>
      findings.find((f) => f.rule_id === rule && f.resource_id === resource)!;

    const used = planted.covered.reduce((sum, { hourly }) => sum + hourly * 24 * planted.coveredRate, 0);
    const plan = find('commitments-unused', planted.savingsPlan.id);
    within15(plan.estimated_monthly_savings, (planted.savingsPlan.perDay - used) * perMonth);
    expect(plan.projected_from_days).toBe(days);

    for (const { id, from } of planted.idleAddresses) {
      const address = find('network-idle-public-ip', id);
      within15(address.estimated_monthly_savings, planted.idleHourly * 24 * perMonth);
      expect(address.projected_from_days).toBe(days - from);
    }
    const newer = planted.covered.find(({ type }) => type.startsWith('c5'))!;
    for (const old of planted.covered.filter(({ type }) => type.startsWith('c4'))) {
      // Under the partly unused plan a cheaper family frees plan, not money: no savings, and it says so.
      const modernise = find('compute-previous-generation', old.id);
      expect(modernise.estimated_monthly_savings).toBeNull();
      expect(modernise.description).toContain(
        `its successor c5 costs ${Math.round((1 - newer.hourly / old.hourly) * 100)}% less`,
      );
      expect(modernise.description).toContain('frees commitment, not money');
    }
    for (const { id, hourly } of planted.alwaysOn) {
      within15(
        find('compute-nonprod-always-on', id).estimated_monthly_savings,
        hourly * 24 * perMonth * (1 - 60 / 168),
      );
      const alternative = find('commitments-steady-on-demand', id);
      expect(alternative.estimated_monthly_savings).toBeNull();
      expect(alternative.projected_from_days).toBeNull();
    }
    const anomalies = findings.filter((f) => f.rule_id.endsWith('anomaly'));
    expect(anomalies.map((f) => f.rule_id).sort()).toEqual(['spend-daily-anomaly', 'spend-service-anomaly']);
    const day = new Date(focusScenario.first + planted.anomaly.day * 86_400_000).toISOString().slice(0, 10);
    for (const anomaly of anomalies) expect(anomaly.description).toContain(`On ${day}`);

    // The untagged and mis-tagged volumes; the one with capitalised keys satisfies the required keys.
    const { untagged, misKeyed } = planted.volumes;
    expect(find('tags-missing-required', untagged.id).description).toContain(
      `has no ${planted.requiredTags.join(', ')} tags`,
    );
    expect(find('tags-missing-required', misKeyed.id).description).toContain('has no Environment tag.');
    expect(find('tags-inconsistent-keys', 'tag-key:environment')).toBeDefined();
    expect(find('tags-inconsistent-values', 'tag-value:environment=production')).toBeDefined();

    const expectedCount =
      1 + planted.idleAddresses.length + 2 + 2 * planted.alwaysOn.length + anomalies.length + 4;
    expect(findings).toHaveLength(expectedCount);
    const text = JSON.stringify(findings);
    for (const quiet of [
      planted.purchase.id,
      planted.scheduled.id,
      planted.volumes.capitalised.id,
      'AWS Support',
      'Tax',
      'credit',
      'Last billed',
    ])
      expect(text).not.toContain(quiet);

    // No resource is promised more than it costs a month, computed from its rows.
    const rows = scenarioRows();
    for (const id of new Set(findings.map((f) => f.resource_id))) {
      const own = rows.filter((row) => row.ResourceId === id);
      if (own.length === 0) continue;
      const cost = own.reduce((sum, row) => sum + Number(row.EffectiveCost), 0);
      const span =
        (Math.max(...own.map((row) => Date.parse(String(row.ChargePeriodEnd)))) -
          Math.min(...own.map((row) => Date.parse(String(row.ChargePeriodStart))))) /
        86_400_000;
      const promised = findings
        .filter((f) => f.resource_id === id)
        .reduce((sum, f) => sum + (f.estimated_monthly_savings ?? 0), 0);
      expect(promised, id).toBeLessThanOrEqual((cost / span) * perMonth + 0.01);
    }
  });

  it("flags no anomaly below the team's minimum daily impact", async () => {
    await identityClient.setAnomalyMinDailyImpact(
      { anomalyMinDailyImpact: planted.anomaly.extra * 1.5 },
      { teamId },
    );
    const findings = await scan();
    expect(findings.filter((f) => f.rule_id.endsWith('anomaly'))).toEqual([]);
    expect(findings.some((f) => f.rule_id === 'commitments-unused')).toBe(true);
  });
});

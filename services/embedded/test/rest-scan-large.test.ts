import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { identity } from '@costgov/contracts';
import { createRpcClient, type RpcClient } from '@costgov/rpc';
import { eventually } from '@costgov/testing';
import type { RunningSystem } from '../src/system';
import { restCaller, startRestSystem } from './support/rest';

// Issue 19: a project of 30,000 resources, scanned end to end through the REST API. Every resource is
// judged (the scan reads every page of costs' data), the findings planted on the last resources in id
// order (the last pages) are there, and a second scan of the same data resolves nothing.

const bootstrapKey = 'cg_live_restscanlargebootstrapkey00000000000';
const call = restCaller(() => system.url, bootstrapKey);
const requiredTags = ['environment'];
let system: RunningSystem;
let teamId: string;
let identityClient: RpcClient<typeof identity.IdentityService>;

const count = 30_000;
const idOf = (i: number) => `i-${String(i).padStart(5, '0')}`;
/** The last 20 resources in id order carry no tags: each lacks the required `environment`. */
const untagged = new Set(Array.from({ length: 20 }, (_, k) => count - 1 - k));
/** Five resources just before them run a previous-generation instance family (t2). */
const oldGeneration = new Set(Array.from({ length: 5 }, (_, k) => count - 21 - k));

/** One small FOCUS row per resource: an hour of an instance on 10 March 2025. */
function exportFile(): string {
  const header =
    'BilledCost,EffectiveCost,BillingCurrency,BillingPeriodStart,BillingPeriodEnd,ChargePeriodStart,ChargePeriodEnd,' +
    'ChargeCategory,ServiceName,ServiceCategory,ResourceId,ChargeDescription,PricingUnit,PricingQuantity,Tags';
  const lines = [header];
  for (let i = 0; i < count; i++) {
    const cost = (0.01 * (1 + (i % 97))).toFixed(2);
    const type = oldGeneration.has(i) ? 't2.medium' : 't3.medium';
    const tags = untagged.has(i) ? '' : '"{""environment"":""production""}"';
    lines.push(
      `${cost},${cost},USD,2025-03-01T00:00:00Z,2025-04-01T00:00:00Z,2025-03-10T00:00:00Z,2025-03-10T01:00:00Z,` +
        `Usage,EC2,Compute,${idOf(i)},${type} Linux Instance Hour,Hours,1,${tags}`,
    );
  }
  return `${lines.join('\n')}\n`;
}

beforeAll(async () => {
  ({ system, teamId } = await startRestSystem(bootstrapKey));
  const identityPort = system.services.find((s) => s.name === 'identity')!.port;
  identityClient = createRpcClient(identity.IdentityService, `127.0.0.1:${identityPort}`);
});

afterAll(async () => {
  identityClient?.close();
  await system?.stop();
});

interface Finding {
  rule_id: string;
  resource_id: string;
  status: string;
}

/** Every finding the query lists, page by page. */
async function findings(query: string): Promise<Finding[]> {
  const all: Finding[] = [];
  for (let page = 1; ; page++) {
    const reply = await call('GET', `/v1/guard/findings?${query}&per_page=100&page=${page}`);
    expect(reply.status, reply.text).toBe(200);
    all.push(...reply.body.data);
    if (page >= reply.body.meta.total_pages) return all;
  }
}

async function scanToEnd(projectId: string) {
  const created = await call('POST', '/v1/guard/scans', { body: { project_id: projectId } });
  expect(created.status, created.text).toBe(202);
  return eventually(async () => {
    const read = await call('GET', `/v1/guard/scans/${created.body.data.id}`);
    return ['completed', 'failed'].includes(read.body.data.status) ? read.body.data : undefined;
  }, 300_000);
}

describe('a scan of 30,000 resources through the REST API', () => {
  it('judges every resource, finds what the last ones hold, and a second scan resolves nothing', async () => {
    await identityClient.setRequiredTags({ requiredTags }, { teamId });
    await identityClient.grantScanCredits({ teamId, credits: 2n });
    const connection = await call('POST', '/v1/guard/connections', {
      body: { name: 'large', provider: 'aws' },
    });
    expect(connection.status, connection.text).toBe(201);
    const connectionId = connection.body.data.id as string;
    const file = exportFile();
    const upload = await call('POST', `/v1/guard/connections/${connectionId}/cost-data`, {
      raw: file,
      contentType: 'text/csv',
    });
    expect(upload.status, upload.text).toBe(200);
    const project = await call('POST', '/v1/guard/projects', {
      body: { name: 'large', connection_ids: [connectionId] },
    });
    expect(project.status, project.text).toBe(201);

    // What the file holds, by the test's own reading: its distinct resource ids, and the planted ones.
    const rows = file.trim().split('\n').slice(1);
    const resources = new Set(rows.map((line) => line.split(',')[10]));
    expect(resources.size).toBe(count);
    const expected = [
      ...[...untagged].map((i) => `tags-missing-required ${idOf(i)}`),
      ...[...oldGeneration].map((i) => `compute-previous-generation ${idOf(i)}`),
    ].sort();

    const first = await scanToEnd(project.body.data.id);
    expect(first).toMatchObject({ status: 'completed', resources_scanned: resources.size });
    const found = await findings(`scan_id=${first.id}`);
    expect(found.map((finding) => `${finding.rule_id} ${finding.resource_id}`).sort()).toEqual(expected);
    expect(first.findings_count).toBe(expected.length);

    const second = await scanToEnd(project.body.data.id);
    expect(second).toMatchObject({
      status: 'completed',
      resources_scanned: resources.size,
      findings_count: expected.length,
    });
    // The second scan saw every resource again: nothing resolved, every finding still open.
    expect(await findings(`project_id=${project.body.data.id}&status=resolved`)).toEqual([]);
    const open = await findings(`project_id=${project.body.data.id}&status=open`);
    expect(open.map((finding) => `${finding.rule_id} ${finding.resource_id}`).sort()).toEqual(expected);
  }, 600_000);
});

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { identity } from '@costgov/contracts';
import { createRpcClient, type RpcClient } from '@costgov/rpc';

import { eventually, focusSample } from '@costgov/testing';
import type { RunningSystem } from '../src/system';
import { restCaller, startRestSystem } from './support/rest';

const { byResource, expectedFindings, sample } = focusSample;

const bootstrapKey = 'cg_live_restscansamplebootstrapkey0000000000';
const call = restCaller(() => system.url, bootstrapKey);
const requiredTags = ['environment', 'application'];
let system: RunningSystem;
let teamId: string;
let identityClient: RpcClient<typeof identity.IdentityService>;

beforeAll(async () => {
  ({ system, teamId } = await startRestSystem(bootstrapKey));
  const identityPort = system.services.find((s) => s.name === 'identity')!.port;
  identityClient = createRpcClient(identity.IdentityService, `127.0.0.1:${identityPort}`);
});

afterAll(async () => {
  identityClient?.close();
  await system?.stop();
});

/** Every finding of a scan, page by page. */
async function findingsOf(scanId: string): Promise<
  Array<{
    rule_id: string;
    resource_id: string;
    estimated_monthly_savings: number | null;
    projected_from_days: number | null;
  }>
> {
  const all = [];
  for (let page = 1; ; page++) {
    const reply = await call('GET', `/v1/guard/findings?scan_id=${scanId}&per_page=100&page=${page}`);
    expect(reply.status, reply.text).toBe(200);
    all.push(...reply.body.data);
    if (page >= reply.body.meta.total_pages) return all;
  }
}

describe('a scan of the FOCUS sample through the REST API', () => {
  it('finds what the file holds', async () => {
    await identityClient.setRequiredTags({ requiredTags }, { teamId });
    await identityClient.grantScanCredits({ teamId, credits: 1n });
    const connection = await call('POST', '/v1/guard/connections', {
      body: { name: 'sample', provider: 'aws' },
    });
    expect(connection.status, connection.text).toBe(201);
    const connectionId = connection.body.data.id as string;
    const upload = await call('POST', `/v1/guard/connections/${connectionId}/cost-data`, {
      raw: sample.toString('utf8'),
      contentType: 'text/csv',
    });
    expect(upload.status, upload.text).toBe(200);
    const project = await call('POST', '/v1/guard/projects', {
      body: { name: 'sample', connection_ids: [connectionId] },
    });
    expect(project.status, project.text).toBe(201);

    const created = await call('POST', '/v1/guard/scans', { body: { project_id: project.body.data.id } });
    expect(created.status, created.text).toBe(202);
    const scan = await eventually(async () => {
      const read = await call('GET', `/v1/guard/scans/${created.body.data.id}`);
      return ['completed', 'failed'].includes(read.body.data.status) ? read.body.data : undefined;
    });
    expect(scan).toMatchObject({ status: 'completed', resources_scanned: byResource().size });

    const expected = expectedFindings(connectionId, requiredTags);
    expect(scan.findings_count).toBe(expected.length);
    const findings = await findingsOf(scan.id);
    expect(findings.map((finding) => `${finding.rule_id} ${finding.resource_id}`).sort()).toEqual(expected);
    // A monthly figure says how many days of the resource's data it was projected from.
    const resources = byResource();
    for (const finding of findings) {
      if (finding.estimated_monthly_savings === null) {
        expect(finding.projected_from_days).toBeNull();
        continue;
      }
      const list = resources.get(finding.resource_id)!;
      const span = (Math.max(...list.map((r) => r.end)) - Math.min(...list.map((r) => r.start))) / 86_400_000;
      expect(finding.projected_from_days, finding.resource_id).toBe(Math.max(1, Math.round(span)));
    }
  });
});

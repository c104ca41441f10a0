import { afterEach, describe, expect, it, vi } from 'vitest';
import { createGuardClient } from '@costgov/client';
import { run } from '../src';
import { checkProject, type CheckPolicy } from '../src/check/gate';
import { scanAndWait } from '../src/check/scan';
import type { CliResult } from './cli';

// The gate against a fake gateway (a fetch that answers from memory): what a real one cannot be made
// to do on cue, a severity the CLI does not know, a list that changes between two page reads, a scan
// that ends in a status other than completed.

const baseUrl = 'http://gateway.test';
const projectId = 'prj_fake';

interface Row {
  id: string;
  severity: string;
}

interface FakeGateway {
  violations: Row[];
  findings: Row[];
  /** The scan's status on POST, then on each GET. */
  scanStatuses: string[];
  /** Called after a list page is served: the list may change here. */
  afterPage?(path: string, page: number): void;
}

function fakeFetch(gateway: FakeGateway): typeof fetch {
  let scanReads = 0;
  const scan = () => ({
    id: 'scn_fake',
    project_id: projectId,
    status: gateway.scanStatuses[Math.min(scanReads++, gateway.scanStatuses.length - 1)],
    resources_scanned: 0,
    findings_count: 0,
    credits_used: 1,
    error: null,
    started_at: null,
    completed_at: null,
    created_at: '2026-01-01T00:00:00Z',
  });
  const page = (path: string, url: URL, rows: unknown[]) => {
    const perPage = Number(url.searchParams.get('per_page') ?? 20);
    const current = Number(url.searchParams.get('page') ?? 1);
    const data = rows.slice((current - 1) * perPage, current * perPage);
    const body = {
      data,
      meta: {
        current_page: current,
        per_page: perPage,
        total_pages: Math.ceil(rows.length / perPage),
        total_count: rows.length,
      },
    };
    gateway.afterPage?.(path, current);
    return Response.json(body);
  };
  return async (input, init) => {
    const request = new Request(input, init);
    const url = new URL(request.url);
    const path = url.pathname;
    if (path === `/v1/guard/projects/${projectId}`)
      return Response.json({ data: { id: projectId, name: 'fake' } });
    if (path === '/v1/guard/violations')
      return page(
        path,
        url,
        url.searchParams.get('status') === 'open'
          ? gateway.violations.map((v) => ({
              id: v.id,
              type: 'budget_threshold_breach',
              severity: v.severity,
              status: 'open',
              message: `violation ${v.id}`,
            }))
          : [],
      );
    if (path === '/v1/guard/findings')
      return page(
        path,
        url,
        gateway.findings.map((f) => ({
          id: f.id,
          rule_id: 'unattached-volume',
          severity: f.severity,
          status: 'open',
          title: 'Unattached volume',
          resource_type: 'aws_ebs_volume',
          resource_id: `vol-${f.id}`,
        })),
      );
    if (path === '/v1/guard/scans' && request.method === 'POST')
      return Response.json({ data: scan() }, { status: 201 });
    if (path === '/v1/guard/scans/scn_fake') return Response.json({ data: scan() });
    return Response.json({ error: { code: 'not_found', message: `no ${path}` } }, { status: 404 });
  };
}

const clientOf = (gateway: FakeGateway) =>
  createGuardClient({ baseUrl, apiKey: 'cg_live_fake', fetch: fakeFetch(gateway) });

const policy: CheckPolicy = { failOn: 'high', ignoreAcknowledged: false };

/** `costgov check` in this process, the REST API being the fake gateway (global fetch stubbed). */
async function check(
  gateway: FakeGateway,
  argv: string[],
  env: Record<string, string> = {},
): Promise<CliResult> {
  vi.stubGlobal('fetch', fakeFetch(gateway));
  const result = { stdout: '', stderr: '' };
  const code = await run(['check', '--project', projectId, ...argv], {
    stdout: { write: (text: string) => (result.stdout += text) },
    stderr: { write: (text: string) => (result.stderr += text) },
    env: { COSTGOV_URL: baseUrl, COSTGOV_API_KEY: 'cg_live_fake', ...env },
  });
  return { code, ...result };
}

afterEach(() => {
  vi.unstubAllGlobals();
});

const rows = (n: number, severity: string, prefix = 'vio') =>
  Array.from({ length: n }, (_, i) => ({ id: `${prefix}_${String(i).padStart(4, '0')}`, severity }));

describe('a severity that is not on the scale', () => {
  it('is thrown by the gate, naming the item and the value, rather than ranked below the policy', async () => {
    const gateway: FakeGateway = {
      violations: [{ id: 'vio_new', severity: 'catastrophic' }],
      findings: [],
      scanStatuses: [],
    };
    await expect(checkProject(clientOf(gateway), projectId, policy)).rejects.toThrow(
      /violation vio_new has severity 'catastrophic'/,
    );
    gateway.violations = [];
    gateway.findings = [{ id: 'fnd_new', severity: 'severe' }];
    await expect(checkProject(clientOf(gateway), projectId, { ...policy, failOn: 'info' })).rejects.toThrow(
      /finding fnd_new has severity 'severe'/,
    );
  });

  it('makes `check` exit 2 (could not check), never 0', async () => {
    const result = await check(
      { violations: [{ id: 'vio_new', severity: 'catastrophic' }], findings: [], scanStatuses: [] },
      [],
    );
    expect(result.stderr).toContain("'catastrophic'");
    expect(result.code).toBe(2);
  });
});

describe('a list that changes between two page reads', () => {
  it('is read again, so an item shifted onto an already read page is not skipped', async () => {
    // 150 open violations, all info but the 101st: resolving the first one after page 1 is read moves
    // the critical one onto page 1, which a single pass has already read.
    const violations = rows(150, 'info');
    violations[100]!.severity = 'critical';
    let resolved = false;
    const gateway: FakeGateway = {
      violations,
      findings: [],
      scanStatuses: [],
      afterPage: (path, page) => {
        if (path === '/v1/guard/violations' && page === 1 && !resolved) {
          resolved = true;
          gateway.violations = gateway.violations.slice(1);
        }
      },
    };
    const outcome = await checkProject(clientOf(gateway), projectId, policy);
    expect(resolved).toBe(true);
    expect(outcome.items.map((item) => item.id)).toEqual(gateway.violations.map((v) => v.id));
    expect(outcome.items.find((item) => item.severity === 'critical')?.failed).toBe(true);
    expect(outcome.passed).toBe(false);

    violations.shift(); // the same again through the CLI: the policy fails (1), it does not pass
    resolved = false;
    gateway.violations = [{ id: 'vio_first', severity: 'info' }, ...violations];
    const result = await check(gateway, []);
    expect(resolved).toBe(true);
    expect(result.code, result.stderr).toBe(1);
  });

  it('that keeps changing is "could not check" (exit 2), after three more reads', async () => {
    let reads = 0;
    const gateway: FakeGateway = {
      violations: rows(150, 'info'),
      findings: [],
      scanStatuses: [],
      afterPage: (path, page) => {
        if (path !== '/v1/guard/violations' || page !== 1) return;
        reads++;
        gateway.violations = gateway.violations.slice(1);
      },
    };
    await expect(checkProject(clientOf(gateway), projectId, policy)).rejects.toThrow(
      'the list /v1/guard/violations changed while it was read; run again',
    );
    expect(reads).toBe(4);

    gateway.violations = rows(150, 'info');
    const result = await check(gateway, []);
    expect(result.stderr).toContain('changed while it was read; run again');
    expect(result.code).toBe(2);
  });

  it('of one page is read once', async () => {
    let reads = 0;
    const gateway: FakeGateway = {
      violations: rows(100, 'info'),
      findings: rows(3, 'low', 'fnd'),
      scanStatuses: [],
      afterPage: () => void reads++,
    };
    const outcome = await checkProject(clientOf(gateway), projectId, policy);
    expect(outcome.items).toHaveLength(103);
    expect(outcome.passed).toBe(true);
    expect(reads).toBe(3); // open violations, acknowledged violations, findings
  });
});

describe('a scan', () => {
  const wait = { timeoutMs: 10_000, intervalMs: 0, progress: () => undefined };

  it('that ends in a status other than completed is thrown, naming the status', async () => {
    const gateway: FakeGateway = { violations: [], findings: [], scanStatuses: ['running', 'cancelled'] };
    await expect(scanAndWait(clientOf(gateway), projectId, wait)).rejects.toThrow(
      "scan scn_fake ended with status 'cancelled', not completed",
    );
    const done: FakeGateway = { violations: [], findings: [], scanStatuses: ['pending', 'completed'] };
    await expect(scanAndWait(clientOf(done), projectId, wait)).resolves.toMatchObject({
      status: 'completed',
    });
  });

  it('makes `check --scan` exit 2 when it does not complete', async () => {
    const result = await check({ violations: [], findings: [], scanStatuses: ['expired'] }, ['--scan']);
    expect(result.stderr).toContain("status 'expired'");
    expect(result.code).toBe(2);
  });
});

describe('an identity address gRPC cannot parse', () => {
  // `check` talks to the REST API only: the identity address (a global option) must not make it fail.
  const clean: FakeGateway = { violations: [], findings: [], scanStatuses: [] };

  // grpc-js throws 'Could not parse target name ""' when a client is made for an empty address.
  it.each(['', 'not a valid address::::'])(
    'does not stop `check` given as --identity %j',
    async (address) => {
      const result = await check(clean, ['--identity', address]);
      expect(result.stderr).toBe('');
      expect(result.code).toBe(0);
    },
  );

  it('does not stop `check` given as IDENTITY_ADDR', async () => {
    const result = await check(clean, ['--quiet'], { IDENTITY_ADDR: 'not a valid address::::' });
    expect(result.stderr).toBe('');
    expect(result).toMatchObject({ code: 0, stdout: 'pass\n' });
  });
});

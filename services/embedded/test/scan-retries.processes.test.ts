import { createNatsBus, decodeEvent, type Bus, type CloudEvent } from '@costgov/bus';
import { events, identity } from '@costgov/contracts';
import { createLogger } from '@costgov/log';
import { createRpcClient, type RpcClient } from '@costgov/rpc';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  createTestDatabase,
  deleteStreams,
  eventually,
  realInfra,
  startBackends,
  startGatewayProcess,
  uniqueName,
  type Backends,
  type Proc,
  type TestDatabase,
  killProcess,
  restartBackend,
} from '@costgov/testing';
import { focusFile } from '@costgov/testing';

const apiKey = 'cg_live_scanretriesbootstrapkey000000000000';
/** Startup of a process on a loaded two-core machine. */
const slow = 120_000;
/**
 * Scan timings of the topology: retries wait at most a quarter of SCAN_STALE_MS (5 s here), and the
 * retry deadline is long enough for costs to boot again, however loaded the machine.
 */
const scanEnv = {
  SCAN_HEARTBEAT_MS: '1000',
  SCAN_ACK_WAIT_MS: '10000',
  SCAN_STALE_MS: '20000',
  SCAN_RETRY_DEADLINE_MS: '300000',
};

interface ScanBody {
  id: string;
  status: string;
  error: string | null;
  credits_used: number;
  findings_count: number;
}

/**
 * Issue 16, item 2: costs restarting for a second failed the scans running their rules. Every service
 * its own process on real Postgres and NATS; costs is killed with SIGKILL while a scan needs it and
 * started again on its port. The scan waits, still `running`, and completes with its findings, charged
 * once and never refunded; with costs down past the retry deadline it fails then and is refunded once.
 */
describe.runIf(realInfra)('scans while costs restarts, every service its own process', () => {
  const namespace = uniqueName('scanretry');
  const procs: Proc[] = [];
  const finished: CloudEvent[] = [];
  let database: TestDatabase;
  let backends: Backends;
  let url = '';
  let observer: Bus;
  let identityClient: RpcClient<typeof identity.IdentityService>;
  let db: pg.Client;
  let teamId = '';
  let projectId = '';

  const call = async (method: string, path: string, body?: unknown, contentType = 'application/json') => {
    const response = await fetch(`${url}${path}`, {
      method,
      headers: { authorization: `Bearer ${apiKey}`, 'content-type': contentType },
      body: body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body),
    });
    return { status: response.status, body: (await response.json()) as { data: any } }; // eslint-disable-line @typescript-eslint/no-explicit-any
  };
  /** The scan, or undefined while the gateway cannot read it (a restarted scanner not reached yet: 503). */
  const scanOf = async (id: string): Promise<ScanBody | undefined> =>
    (await call('GET', `/v1/guard/scans/${id}`)).body.data as ScanBody | undefined;
  const ended = (id: string, timeoutMs = 90_000) =>
    eventually(async () => {
      const scan = await scanOf(id);
      return scan?.status === 'completed' || scan?.status === 'failed' ? scan : undefined;
    }, timeoutMs);
  const balance = async () => Number((await identityClient.getTeam({ id: teamId })).scanCredits);
  const ledger = async (scanId: string) =>
    (
      await db.query<{ credits: string; refunded: boolean }>(
        `SELECT credits::text, refunded_at IS NOT NULL AS refunded FROM identity.scan_credit_debits
         WHERE scan_id = $1`,
        [scanId],
      )
    ).rows;
  const finishEvents = (scanId: string) =>
    finished
      .map((event) => decodeEvent(events.ScanFinishedSchema, event))
      .filter((event) => event.scanId === scanId)
      .map((event) => event.status);
  /** The scanner's warnings about one scan waiting for a retry (its log lines are JSON on stdout). */
  const retriesOf = (scanId: string) =>
    procs
      .filter((p) => p.name === 'scanner')
      .flatMap((p) => p.output().split('\n'))
      .filter((line) => line.includes(scanId) && line.includes('scan waits for an unavailable dependency'))
      .map((line) => JSON.parse(line) as { scan_id: string; reason: string; retry_in_ms: number });

  const kill = (name: string, signal: NodeJS.Signals = 'SIGKILL') => killProcess(procs, name, signal);
  const restart = async (name: 'costs' | 'scanner', env: NodeJS.ProcessEnv = {}) =>
    void (await restartBackend(name, backends, procs, url, { env, timeoutMs: slow }));

  beforeAll(async () => {
    database = await createTestDatabase('scanretry');
    backends = await startBackends(
      {
        DATABASE_URL: database.url,
        NATS_URL: process.env.NATS_URL,
        EVENT_NAMESPACE: namespace,
        GUARD_BOOTSTRAP_API_KEY: apiKey,
        ...scanEnv,
      },
      procs,
    );
    url = (await startGatewayProcess('gateway', backends, {}, procs)).url;
    observer = await createNatsBus({
      url: process.env.NATS_URL!,
      namespace,
      logger: createLogger('test', 'silent'),
    });
    await observer.consume({
      durable: 'scan_retries_test_observer',
      types: ['scanner.scan.completed', 'scanner.scan.failed'],
      handler: async (event) => void finished.push(event),
    });
    identityClient = createRpcClient(identity.IdentityService, backends.identity);
    db = new pg.Client({ connectionString: database.url });
    await db.connect();

    teamId = (await identityClient.listTeams({})).teams.find((t) => t.name === 'default')!.id;
    await identityClient.grantScanCredits({ teamId, credits: 10n });
    const connection = await call('POST', '/v1/guard/connections', { name: 'aws-prod', provider: 'aws' });
    expect(connection.status).toBe(201);
    const upload = await call(
      'POST',
      `/v1/guard/connections/${connection.body.data.id}/cost-data`,
      focusFile([120.5, 80.25, 310]),
      'text/csv',
    );
    expect(upload.status).toBe(200);
    const project = await call('POST', '/v1/guard/projects', {
      name: 'scanned',
      connection_ids: [connection.body.data.id],
    });
    expect(project.status).toBe(201);
    projectId = project.body.data.id as string;
  }, 2 * slow);

  afterAll(async () => {
    identityClient?.close();
    await db?.end();
    await observer?.close();
    await Promise.all(procs.map((p) => p.stop()));
    await database?.drop();
    await deleteStreams(process.env.NATS_URL!, namespace);
  }, 60_000);

  it(
    'a scan that meets costs down waits, running, and completes once costs is back: findings, one credit, no refund',
    async () => {
      const before = await balance();
      await kill('costs');
      const created = await call('POST', '/v1/guard/scans', { project_id: projectId });
      expect(created.status).toBe(202);
      const id = created.body.data.id as string;

      // The worker met costs down and waits for the next try: still running, nothing to show as an error.
      await eventually(() => (retriesOf(id).length > 0 ? true : undefined), 30_000);
      expect(await scanOf(id)).toMatchObject({ status: 'running', error: null, credits_used: 1 });
      expect(retriesOf(id)[0]!.reason).toMatch(/unavailable/i);

      await restart('costs');
      const scan = await ended(id);
      expect(scan).toMatchObject({ status: 'completed', error: null, credits_used: 1 });
      // The file's rows carry no tags: all of the connection's spend is unallocated.
      expect(scan.findings_count).toBeGreaterThan(0);
      const findings = await call('GET', `/v1/guard/findings?scan_id=${id}&per_page=100`);
      expect(findings.body.data).toHaveLength(scan.findings_count);
      expect(findings.body.data).toContainEqual(
        expect.objectContaining({ rule_id: 'spend-unallocated-share', project_id: projectId }),
      );

      // Completed once, charged once, never refunded.
      await eventually(() => (finishEvents(id).length > 0 ? true : undefined), 30_000);
      await new Promise((resolve) => setTimeout(resolve, 1_000));
      expect(finishEvents(id)).toEqual(['completed']);
      expect(await ledger(id)).toEqual([{ credits: '1', refunded: false }]);
      expect(await balance()).toBe(before - 1);
    },
    3 * slow,
  );

  it(
    'a scan whose costs stays down past the retry deadline fails then and is refunded once',
    async () => {
      // The same scanner with a retry deadline of 3 s.
      await kill('scanner', 'SIGTERM');
      await restart('scanner', { SCAN_RETRY_DEADLINE_MS: '3000' });
      await kill('costs');
      const before = await balance();
      const created = await call('POST', '/v1/guard/scans', { project_id: projectId });
      expect(created.status).toBe(202);
      const id = created.body.data.id as string;

      const scan = await ended(id, 60_000);
      expect(scan).toMatchObject({ status: 'failed', credits_used: 0 });
      expect(scan.error).toMatch(/stayed unavailable for more than 3 s/);
      expect(retriesOf(id).length).toBeGreaterThan(0);

      await eventually(async () => ((await balance()) === before ? true : undefined), 30_000);
      await eventually(() => (finishEvents(id).length > 0 ? true : undefined), 30_000);
      await new Promise((resolve) => setTimeout(resolve, 1_000));
      expect(finishEvents(id)).toEqual(['failed']);
      expect(await ledger(id)).toEqual([{ credits: '1', refunded: true }]);
      // The ledger holds one refund: another attempt changes nothing.
      expect((await identityClient.refundScanCredits({ scanId: id }, { teamId })).applied).toBe(false);
      expect(await balance()).toBe(before);
    },
    3 * slow,
  );
});

import { createNatsBus, decodeEvent, type Bus, type CloudEvent } from '@costgov/bus';
import { events, identity } from '@costgov/contracts';
import { createLogger } from '@costgov/log';
import { createRpcClient, type RpcClient } from '@costgov/rpc';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  createTestDatabase,
  deleteStreams,
  dependencyEnv,
  eventually,
  focusFile,
  realInfra,
  startBackends,
  startGatewayProcess,
  startReplica,
  uniqueName,
  type Backends,
  type Proc,
  type TestDatabase,
} from '@costgov/testing';

const apiKey = 'cg_live_scanshardsbootstrapkey00000000000';
/** The planted estate: one row per resource, every third tagged with the team's required key. */
const resourceCount = 60;
const perShard = 10;
const shards = Math.ceil(resourceCount / perShard);
const resourceId = (i: number) => `i-shard-${String(i).padStart(3, '0')}`;
const tagged = (i: number) => i % 3 === 0;
const requiredTag = 'team';

interface ScanAnswer {
  id: string;
  status: string;
  resources_scanned: number;
  findings_count: number;
  credits_used: number;
  shards_total: number;
  shards_done: number;
}

/**
 * A sharded scan with two worker processes (SCANNER_MODE=worker), one killed with SIGKILL while it runs a
 * shard; every service its own process on real Postgres and NATS, driven through the REST API. The scan
 * completes once, with every planted finding once, the killed worker's shard taken over by the other,
 * and the credits add up in identity. A second scan of the same data by the surviving worker alone
 * finds the same, and resolves nothing.
 */
describe.runIf(realInfra)('sharded scan: two worker processes, one killed mid-shard', () => {
  const namespace = uniqueName('scanshards');
  const procs: Proc[] = [];
  const finished: CloudEvent[] = [];
  let url = '';
  let backends: Backends;
  let observer: Bus;
  let identityClient: RpcClient<typeof identity.IdentityService>;
  let db: pg.Client;
  let database: TestDatabase;

  const startWorker = (name: string) =>
    startReplica(
      name,
      'services/scanner/src/worker.ts',
      // Info: the test reads which run stored each shard from the workers' `scan shard finished` lines.
      { ...backends.env, SCANNER_MODE: 'worker', LOG_LEVEL: 'info', ...dependencyEnv('scanner', backends) },
      procs,
    );
  const call = async (method: string, path: string, body?: unknown, contentType = 'application/json') => {
    const reply = await fetch(`${url}${path}`, {
      method,
      headers: { authorization: `Bearer ${apiKey}`, 'content-type': contentType },
      body: body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body),
    });
    return { status: reply.status, body: (await reply.json()) as { data: Record<string, unknown> } };
  };
  const getScan = async (id: string) =>
    (await call('GET', `/v1/guard/scans/${id}`)).body.data as unknown as ScanAnswer;

  beforeAll(async () => {
    database = await createTestDatabase('scanshards');
    backends = await startBackends(
      {
        DATABASE_URL: database.url,
        NATS_URL: process.env.NATS_URL,
        EVENT_NAMESPACE: namespace,
        GUARD_BOOTSTRAP_API_KEY: apiKey,
        // The scanner process of the topology serves the API only: the two workers below run the scans.
        SCANNER_MODE: 'api',
        SCAN_SHARD_RESOURCES: String(perShard),
        // Each shard takes 1.5 s more, so the kill lands while a shard runs.
        SCAN_EXTRA_DELAY_MS: '1500',
        SCAN_CONCURRENCY: '1',
        SCAN_HEARTBEAT_MS: '200',
        SCAN_ACK_WAIT_MS: '1500',
        SCAN_STALE_MS: '30000',
      },
      procs,
    );
    url = (await startGatewayProcess('gateway', backends, {}, procs)).url;
    await startWorker('scanner-worker-1');
    await startWorker('scanner-worker-2');
    observer = await createNatsBus({
      url: process.env.NATS_URL!,
      namespace,
      logger: createLogger('test', 'silent'),
    });
    await observer.consume({
      durable: 'scan_shards_test_observer',
      types: ['scanner.scan.completed', 'scanner.scan.failed'],
      handler: async (event) => void finished.push(event),
    });
    identityClient = createRpcClient(identity.IdentityService, backends.identity);
    db = new pg.Client({ connectionString: database.url });
    await db.connect();
  }, 180_000);

  afterAll(async () => {
    identityClient?.close();
    await db?.end();
    await observer?.close();
    await Promise.all(procs.map((p) => p.stop()));
    await database?.drop();
    await deleteStreams(process.env.NATS_URL!, namespace);
  }, 60_000);

  const finishedScan = (id: string, timeoutMs = 90_000) =>
    eventually(async () => {
      const scan = await getScan(id);
      return scan.status === 'completed' || scan.status === 'failed' ? scan : undefined;
    }, timeoutMs);
  const findingsOf = async (projectId: string) =>
    (
      await db.query<{ rule_id: string; resource_id: string; status: string; scan_id: string }>(
        'SELECT rule_id, resource_id, status, scan_id FROM scanner.findings WHERE project_id = $1',
        [projectId],
      )
    ).rows;
  const finishEventsOf = (id: string) =>
    finished
      .map((event) => decodeEvent(events.ScanFinishedSchema, event))
      .filter((event) => event.scanId === id)
      .map((event) => event.status);

  it('completes once with every planted finding once, the killed shard taken over, credits once', async () => {
    const { teams } = await identityClient.listTeams({});
    const teamId = teams.find((t) => t.name === 'default')!.id;
    await identityClient.grantScanCredits({ teamId, credits: 10n });
    await identityClient.setRequiredTags({ requiredTags: [requiredTag] }, { teamId });

    const connection = await call('POST', '/v1/guard/connections', { name: 'estate', provider: 'aws' });
    expect(connection.status).toBe(201);
    const connectionId = connection.body.data.id as string;
    const file = focusFile(
      Array.from({ length: resourceCount }, (_, i) => ({
        cost: 10 + (i % 7),
        tags: (tagged(i) ? { [requiredTag]: 'storefront' } : { owner: 'nobody' }) as Record<string, string>,
      })),
      { resourceId, chargeDay: 'spread' },
    );
    const upload = await call('POST', `/v1/guard/connections/${connectionId}/cost-data`, file, 'text/csv');
    expect(upload.status).toBe(200);
    const project = await call('POST', '/v1/guard/projects', {
      name: 'estate',
      connection_ids: [connectionId],
    });
    expect(project.status).toBe(201);
    const projectId = project.body.data.id as string;

    const balance = async () => Number((await identityClient.getTeam({ id: teamId })).scanCredits);
    const before = await balance();
    const created = await call('POST', '/v1/guard/scans', { project_id: projectId });
    expect(created.status).toBe(202);
    const scanId = created.body.data.id as string;

    // Kill worker 1 while it holds a running shard (its pid is in the shard's worker_id).
    const victim = procs.find((p) => p.name === 'scanner-worker-1')!;
    const survivor = procs.find((p) => p.name === 'scanner-worker-2')!;
    const held = await eventually(async () => {
      const { rows } = await db.query<{ shard_index: number }>(
        `SELECT shard_index FROM scanner.scan_shards
         WHERE scan_id = $1 AND status = 'running' AND worker_id LIKE $2`,
        [scanId, `%:${victim.child.pid}:%`],
      );
      return rows.length > 0 ? rows.map((r) => r.shard_index) : undefined;
    }, 60_000);
    // Progress while it runs: the scan is split, not every shard is stored yet.
    const running = await getScan(scanId);
    expect(running).toMatchObject({ status: 'running', shards_total: shards });
    expect(running.shards_done).toBeLessThan(shards);
    victim.child.kill('SIGKILL');

    const scan = await finishedScan(scanId);
    expect(scan).toMatchObject({
      status: 'completed',
      resources_scanned: resourceCount,
      shards_total: shards,
      shards_done: shards,
      credits_used: 1,
    });
    // The shards the killed worker held were stored by the survivor, once.
    const { rows: shardRows } = await db.query<{ shard_index: number; status: string; worker_id: string }>(
      'SELECT shard_index, status, worker_id FROM scanner.scan_shards WHERE scan_id = $1 ORDER BY shard_index',
      [scanId],
    );
    expect(shardRows.map((r) => r.shard_index)).toEqual([...Array(shards).keys()]);
    expect(shardRows.every((r) => r.status === 'done')).toBe(true);
    for (const index of held) expect(shardRows[index]!.worker_id).toContain(`:${survivor.child.pid}:`);
    // Each shard stored once, by the run its row names (the workers' logs: `stored` or `last`, never
    // twice), and exactly one of them the last, which queued the merge.
    const shardLines = [victim, survivor]
      .flatMap((p) => p.output().split('\n'))
      .filter((line) => line.startsWith('{'))
      .map(
        (line) =>
          JSON.parse(line) as {
            msg?: string;
            scan_id?: string;
            shard?: number;
            run_id?: string;
            stored?: string;
          },
      )
      .filter((line) => line.msg === 'scan shard finished' && line.scan_id === scanId);
    const storedLines = shardLines.filter((line) => line.stored === 'stored' || line.stored === 'last');
    expect(storedLines.map((line) => line.shard).sort((a, b) => a! - b!)).toEqual([...Array(shards).keys()]);
    for (const line of storedLines) expect(line.run_id).toBe(shardRows[line.shard!]!.worker_id);
    expect(storedLines.filter((line) => line.stored === 'last')).toHaveLength(1);

    // Every untagged resource has its missing-tag finding, once; nothing is found twice.
    const findings = await findingsOf(projectId);
    const untagged = Array.from({ length: resourceCount }, (_, i) => i)
      .filter((i) => !tagged(i))
      .map(resourceId);
    const missing = findings.filter((f) => f.rule_id === 'tags-missing-required').map((f) => f.resource_id);
    expect(missing.sort()).toEqual(untagged.sort());
    const keys = findings.map((f) => `${f.rule_id} ${f.resource_id}`);
    // The planted estate has no other finding: the scan counts each planted one exactly once (a shard
    // stored twice, or resources judged by two shards, would count more than were planted).
    expect(keys.sort()).toEqual(untagged.map((r) => `tags-missing-required ${r}`).sort());
    expect(findings.every((f) => f.scan_id === scanId && f.status === 'open')).toBe(true);
    expect(scan.findings_count).toBe(untagged.length);
    // The scan was completed once: one completion in the outbox, whatever the bus delivered.
    const { rows: outboxed } = await db.query<{ type: string }>(
      `SELECT type FROM scanner.outbox WHERE subject = $1 AND type IN ('scanner.scan.completed', 'scanner.scan.failed')`,
      [scanId],
    );
    expect(outboxed.map((row) => row.type)).toEqual(['scanner.scan.completed']);

    // One finish event; one debit, no refund; the balance down by the scan's credit.
    await eventually(() => (finishEventsOf(scanId).length > 0 ? true : undefined), 30_000);
    await new Promise((resolve) => setTimeout(resolve, 1_000));
    expect(finishEventsOf(scanId)).toEqual(['completed']);
    const { rows: ledger } = await db.query<{ credits: number; refunded: boolean }>(
      `SELECT credits::int AS credits, refunded_at IS NOT NULL AS refunded
       FROM identity.scan_credit_debits WHERE scan_id = $1`,
      [scanId],
    );
    expect(ledger).toEqual([{ credits: 1, refunded: false }]);
    expect(await balance()).toBe(before - 1);

    // The same data scanned again by the survivor alone: the same findings, none resolved or added.
    const again = await call('POST', '/v1/guard/scans', { project_id: projectId });
    expect(again.status).toBe(202);
    const second = await finishedScan(again.body.data.id as string);
    expect(second).toMatchObject({
      status: 'completed',
      resources_scanned: resourceCount,
      shards_total: shards,
      findings_count: scan.findings_count,
    });
    const after = await findingsOf(projectId);
    expect(after.map((f) => `${f.rule_id} ${f.resource_id}`).sort()).toEqual([...keys].sort());
    expect(after.every((f) => f.status === 'open' && f.scan_id === second.id)).toBe(true);
    const { rows: survivors } = await db.query<{ worker_id: string }>(
      'SELECT worker_id FROM scanner.scan_shards WHERE scan_id = $1',
      [second.id],
    );
    expect(survivors.every((r) => r.worker_id.includes(`:${survivor.child.pid}:`))).toBe(true);
    expect(await balance()).toBe(before - 2);
  }, 240_000);
});

import { createNatsBus, decodeEvent, type Bus, type CloudEvent } from '@costgov/bus';
import { events, identity } from '@costgov/contracts';
import { createLogger } from '@costgov/log';
import { createRpcClient, type RpcClient } from '@costgov/rpc';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  deleteStreams,
  dependencyEnv,
  eventually,
  realInfra,
  startBackends,
  startGatewayProcess,
  uniqueName,
  type Backends,
  type Proc,
  createTestDatabase,
  startReplica,
  type TestDatabase,
} from '@costgov/testing';

const apiKey = 'cg_live_scanworkersbootstrapkey0000000000';
const scanCount = 50;
const granted = 80;

/**
 * The API side of the scanner and two worker processes (SCANNER_MODE=worker) on one work queue, every
 * service its own process on real Postgres and NATS: 50 scans through the REST API, one worker killed
 * with SIGKILL while it runs a scan. Every scan ends completed or failed, none finishes twice, and the
 * credits add up in identity's ledger.
 */
describe.runIf(realInfra)('scan workers: two processes share the queue; a killed one loses nothing', () => {
  const namespace = uniqueName('scanw');
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
      { ...backends.env, SCANNER_MODE: 'worker', ...dependencyEnv('scanner', backends) },
      procs,
    );
  const post = (path: string, body: unknown) =>
    fetch(`${url}${path}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });

  beforeAll(async () => {
    database = await createTestDatabase('scanw');
    backends = await startBackends(
      {
        DATABASE_URL: database.url,
        NATS_URL: process.env.NATS_URL,
        EVENT_NAMESPACE: namespace,
        GUARD_BOOTSTRAP_API_KEY: apiKey,
        // The scanner process of the topology serves the API only: the two workers below run the scans.
        SCANNER_MODE: 'api',
        SCAN_EXTRA_DELAY_MS: '300',
        SCAN_CONCURRENCY: '2',
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
      durable: 'scan_workers_test_observer',
      types: ['scanner.scan.completed', 'scanner.scan.failed'],
      handler: async (event) => {
        finished.push(event);
      },
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

  it('runs 50 scans once each across two workers, survives kill -9 of one mid-scan, and the credits add up', async () => {
    const { teams } = await identityClient.listTeams({});
    const teamId = teams.find((t) => t.name === 'default')!.id;
    await identityClient.grantScanCredits({ teamId, credits: BigInt(granted) });

    const projectIds: string[] = [];
    for (let i = 0; i < 5; i++) {
      const reply = await post('/v1/guard/projects', { name: `scanned-${i}` });
      expect(reply.status).toBe(201);
      projectIds.push(((await reply.json()) as { data: { id: string } }).data.id);
    }
    const scanIds: string[] = [];
    for (let i = 0; i < scanCount; i++) {
      const reply = await post('/v1/guard/scans', { project_id: projectIds[i % projectIds.length] });
      expect(reply.status).toBe(202);
      scanIds.push(((await reply.json()) as { data: { id: string } }).data.id);
    }

    // Kill worker 1 while it holds a running scan (its pid is in the scan's worker_id).
    const victim = procs.find((p) => p.name === 'scanner-worker-1')!;
    const held = await eventually(async () => {
      const { rows } = await db.query<{ id: string }>(
        `SELECT id FROM scanner.scans WHERE status = 'running' AND worker_id LIKE $1`,
        [`%:${victim.child.pid}:%`],
      );
      return rows.length > 0 ? rows.map((r) => r.id) : undefined;
    }, 30_000);
    victim.child.kill('SIGKILL');

    const scans = await eventually(async () => {
      const { rows } = await db.query<{
        id: string;
        status: string;
        credits_used: number;
        worker_id: string;
      }>('SELECT id, status, credits_used, worker_id FROM scanner.scans');
      return rows.length === scanCount && rows.every((r) => r.status === 'completed' || r.status === 'failed')
        ? rows
        : undefined;
    }, 90_000);
    expect(scans.map((s) => s.id).sort()).toEqual([...scanIds].sort());
    // The scans the killed worker held were taken over (or swept), never left running.
    for (const id of held) expect(['completed', 'failed']).toContain(scans.find((s) => s.id === id)!.status);
    const survivor = procs.find((p) => p.name === 'scanner-worker-2')!;
    for (const id of held) {
      const scan = scans.find((s) => s.id === id)!;
      if (scan.status === 'completed') expect(scan.worker_id).toContain(`:${survivor.child.pid}:`);
    }

    // One finish event per scan, never two (a redelivered or taken-over scan is not finished again).
    await eventually(() => (finished.length >= scanCount ? true : undefined), 30_000);
    await new Promise((resolve) => setTimeout(resolve, 2_000));
    const perScan = new Map<string, string[]>();
    for (const event of finished) {
      const { scanId, status } = decodeEvent(events.ScanFinishedSchema, event);
      perScan.set(scanId, [...(perScan.get(scanId) ?? []), status]);
    }
    expect(perScan.size).toBe(scanCount);
    for (const scan of scans) expect(perScan.get(scan.id)).toEqual([scan.status]);

    // Credits: what identity's ledger kept (debits minus refunds) is what the scans used, and the balance
    // is what was granted minus that.
    const used = scans.reduce((sum, s) => sum + s.credits_used, 0);
    const ledger = await eventually(async () => {
      const { rows } = await db.query<{ debits: number; debited: number; refunded: number }>(
        `SELECT count(*)::int AS debits, coalesce(sum(credits), 0)::int AS debited,
           coalesce(sum(credits) FILTER (WHERE refunded_at IS NOT NULL), 0)::int AS refunded
         FROM identity.scan_credit_debits WHERE team_id = $1`,
        [teamId],
      );
      const failed = scans.filter((s) => s.status === 'failed').length;
      // Refunds follow failures through scanner.scan.failed: wait for each failed scan's.
      const { rows: refunds } = await db.query<{ n: number }>(
        `SELECT count(*)::int AS n FROM identity.scan_credit_debits WHERE team_id = $1 AND refunded_at IS NOT NULL`,
        [teamId],
      );
      return refunds[0]!.n === failed ? rows[0]! : undefined;
    }, 30_000);
    expect(ledger.debits).toBe(scanCount);
    expect(ledger.debited - ledger.refunded).toBe(used);
    const balance = Number((await identityClient.getTeam({ id: teamId })).scanCredits);
    expect(balance).toBe(granted - used);
  }, 240_000);
});

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { CloudEvent } from '@costgov/bus';
import { costs, identity, scanner } from '@costgov/contracts';
import { costsModule } from '@costgov/costs';
import type { Db } from '@costgov/db';
import { identityModule } from '@costgov/identity';
import { newId } from '@costgov/ids';
import { createLogger } from '@costgov/log';
import { createRpcClient, type RpcClient } from '@costgov/rpc';
import { startService, type RunningService } from '@costgov/runtime';
import { eventually, focusSample, freePort, freshDb, testBus } from '@costgov/testing';
import { scannerModule } from '../src/module';
import type { ProjectLookup } from '../src/scans/project-lookup';
import { scanRunnerOverRpc } from '../src/scans/rules-over-rpc';
import type { ScanRunner } from '../src/scans/run-rules';
import { scanCreditsOverRpc } from '../src/scans/scan-credits';
import { createHolding } from './costs-fixture';

const { expectedFindings, sample } = focusSample;

/*
 * Scans whose dependencies go away, on the real services in this process: identity (credits), costs
 * (the FOCUS sample's cost data) and the scanner running the real rules over gRPC. Costs is stopped and
 * started again on its port, as a restart does; Postgres going away while the findings are written is
 * a failing statement. Runs on the embedded default and on real Postgres and NATS.
 */

const logger = createLogger('test', 'silent');
/** The scanners' warnings, as JSON lines: each retry must say which scan and why. */
const warnings: Array<Record<string, unknown>> = [];
const scannerLogger = createLogger('scanner', 'warn', {
  write: (line: string) => void warnings.push(JSON.parse(line) as Record<string, unknown>),
});
const waitLine = 'scan waits for an unavailable dependency';
const retriesOf = (scanId: string) => warnings.filter((w) => w.scan_id === scanId && w.msg === waitLine);

type Bus = Awaited<ReturnType<typeof testBus>>;

interface Scanner {
  service: RunningService;
  client: RpcClient<typeof scanner.ScansService>;
  bus: Bus;
  /** scanner.scan.completed and .failed, as published. */
  finished: CloudEvent[];
  /** Attempts per scan: each starts by planning it (a COUNT from costs), which a costs outage meets. */
  runs: Map<string, number>;
  /** Shards run and merges run per scan. */
  shards: Map<string, number>;
  merges: Map<string, number>;
  stop(): Promise<void>;
}

let identityService: RunningService;
let identityClient: RpcClient<typeof identity.IdentityService>;
let costsService: RunningService;
let costsDb: Db;
let costsAddress = '';
let team: { teamId: string };
let connectionId = '';
const projects = new Map<string, string[]>();
const lookup: ProjectLookup = {
  async project(_teamId, projectId) {
    return { id: projectId, status: 'active', connectionIds: projects.get(projectId) ?? [] };
  },
};
const newProject = () => {
  const id = newId('project');
  projects.set(id, [connectionId]);
  return id;
};

let bus: Bus;
/** Scans where costs comes back (deadline 60 s). */
let patient: Scanner;
/** Scans whose costs never answers (deadline 2.5 s). */
let hurried: Scanner;
const hurriedDeadlineMs = 2_500;
/** Set to make the next completing write of `patient` fail as when Postgres restarts. */
let postgresGoesAwayOnce = false;

/** Costs on its fixed port; its database outlives a stop, as a restarted process finds its data. */
const startCosts = () =>
  startService(costsModule(), {
    logger,
    bus,
    openDb: async () => ({ ...costsDb, close: async () => undefined }),
    dataDir: 'memory',
    grpcAddress: costsAddress,
  });

async function startScanner(options: { bus: Bus; costsAddress: string; retryDeadlineMs: number }) {
  const raw = await freshDb('scanner');
  // A Postgres restart under the transaction that completes a scan: admin_shutdown, nothing written.
  const db: Db = {
    ...raw,
    transaction: (work) =>
      raw.transaction((tx) =>
        work({
          ...tx,
          query: ((text: string, params?: unknown[]) => {
            if (postgresGoesAwayOnce && text.includes("SET status = 'completed'")) {
              postgresGoesAwayOnce = false;
              const error = Object.assign(new Error('terminating connection due to administrator command'), {
                code: '57P01',
              });
              return Promise.reject(error);
            }
            return tx.query(text, params);
          }) as typeof tx.query,
        }),
      ),
  };
  const scanData = createRpcClient(costs.ScanDataService, options.costsAddress, { deadlineMs: 120_000 });
  const overRpc = scanRunnerOverRpc({ scanData, identityClient });
  const runs = new Map<string, number>();
  const shards = new Map<string, number>();
  const merges = new Map<string, number>();
  const count = (counts: Map<string, number>, scanId: string) =>
    counts.set(scanId, (counts.get(scanId) ?? 0) + 1);
  // The sample is a small scan: one shard, run and merged by the worker that planned it.
  const runner: ScanRunner = {
    plan: (work, now, shardsFor) => {
      count(runs, work.scanId);
      return overRpc.plan(work, now, shardsFor);
    },
    runShard: (scan, shard, progress) => {
      count(shards, scan.scanId);
      return overRpc.runShard(scan, shard, progress);
    },
    runProjectRules: (scan, pending) => {
      count(merges, scan.scanId);
      return overRpc.runProjectRules(scan, pending);
    },
  };
  const service = await startService(
    scannerModule({
      scans: {
        projects: lookup,
        credits: scanCreditsOverRpc(identityClient),
        runner,
        retryDeadlineMs: options.retryDeadlineMs,
      },
    }),
    {
      logger: scannerLogger,
      bus: options.bus,
      openDb: async () => db,
      dataDir: 'memory',
      grpcAddress: '127.0.0.1:0',
    },
  );
  const finished: CloudEvent[] = [];
  await options.bus.consume({
    durable: 'scan_retries_observer',
    types: ['scanner.scan.completed', 'scanner.scan.failed'],
    handler: async (event) => void finished.push(event),
  });
  const client = createRpcClient(scanner.ScansService, `127.0.0.1:${service.port}`);
  return {
    service,
    client,
    bus: options.bus,
    finished,
    runs,
    shards,
    merges,
    async stop() {
      client.close();
      scanData.close();
      await service.stop();
    },
  } satisfies Scanner;
}

beforeAll(async () => {
  bus = await testBus(logger);
  const identityDb = await freshDb('identity');
  identityService = await startService(identityModule({ onBootstrap: () => undefined }), {
    logger,
    bus,
    env: {},
    openDb: async () => identityDb,
    dataDir: 'memory',
    grpcAddress: '127.0.0.1:0',
  });
  identityClient = createRpcClient(identity.IdentityService, `127.0.0.1:${identityService.port}`);
  team = { teamId: (await identityClient.createTeam({ name: 'retried', plan: 'team' })).id };
  await identityClient.grantScanCredits({ teamId: team.teamId, credits: 20n });

  costsDb = await freshDb('costs');
  costsAddress = `127.0.0.1:${await freePort()}`;
  costsService = await startCosts();
  const connections = createRpcClient(costs.ConnectionsService, costsAddress);
  const costData = createRpcClient(costs.CostDataService, costsAddress);
  try {
    connectionId = await createHolding({ connections, costData }, team, 'sample', sample);
  } finally {
    connections.close();
    costData.close();
  }

  patient = await startScanner({ bus, costsAddress, retryDeadlineMs: 60_000 });
  // Its own bus (and work queue), and a costs address nothing listens on.
  hurried = await startScanner({
    bus: await testBus(logger),
    costsAddress: `127.0.0.1:${await freePort()}`,
    retryDeadlineMs: hurriedDeadlineMs,
  });
}, 60_000);

afterAll(async () => {
  await patient?.stop();
  await hurried?.stop();
  await hurried?.bus.close();
  await costsService?.stop();
  await costsDb?.close();
  identityClient?.close();
  await identityService?.stop();
  await bus?.close();
});

const balance = async () => Number((await identityClient.getTeam({ id: team.teamId })).scanCredits);
const ledger = async (scanId: string) =>
  (
    await identityService.db.query<{ credits: string; refunded_at: Date | null }>(
      'SELECT credits::text, refunded_at FROM scan_credit_debits WHERE scan_id = $1',
      [scanId],
    )
  ).rows;
const finished = (at: Scanner, id: string, timeoutMs = 20_000) =>
  eventually(async () => {
    const scan = await at.client.getScan({ id }, team);
    return scan.status === 'completed' || scan.status === 'failed' ? scan : undefined;
  }, timeoutMs);
const eventsOf = (at: Scanner, id: string) => at.finished.filter((e) => e.subject === id).map((e) => e.type);
const findingRows = async (at: Scanner, projectId: string) =>
  (
    await at.service.db.query<{ scan_id: string }>('SELECT scan_id FROM findings WHERE project_id = $1', [
      projectId,
    ])
  ).rows;

describe(`scans whose dependencies go away (${process.env.DATABASE_URL ? 'postgres' : 'pglite'}, ${process.env.NATS_URL ? 'nats' : 'in-process bus'})`, () => {
  it('a scan started while costs is down stays running, backs off, and completes once costs is back: findings once, one credit, no refund', async () => {
    const projectId = newProject();
    const before = await balance();
    await costsService.stop();
    let scanId = '';
    try {
      scanId = (await patient.client.createScan({ projectId }, team)).id;
      // Two tries met costs down: the scan waits for the next, still running, with no error to show.
      await eventually(() => (retriesOf(scanId).length >= 2 ? true : undefined));
      const waiting = await patient.client.getScan({ id: scanId }, team);
      expect(waiting).toMatchObject({ status: 'running', creditsUsed: 1 });
      expect(waiting.error).toBeUndefined();
      await new Promise((resolve) => setTimeout(resolve, 2_000));
    } finally {
      costsService = await startCosts();
    }

    const scan = await finished(patient, scanId);
    expect(scan).toMatchObject({ status: 'completed', creditsUsed: 1 });
    const expected = expectedFindings(connectionId, []);
    expect(scan.findingsCount).toBe(expected.length);
    expect(await findingRows(patient, projectId)).toEqual(expected.map(() => ({ scan_id: scanId })));

    // Backoff, not a busy loop: about 3.5 s of costs down took three or four tries, each wait doubling.
    const retries = retriesOf(scanId);
    expect(retries.length).toBeGreaterThanOrEqual(2);
    expect(retries.length).toBeLessThanOrEqual(4);
    expect(retries.map((r) => r.retry_in_ms)).toEqual([1_000, 2_000, 4_000].slice(0, retries.length));
    for (const retry of retries) {
      expect(retry).toMatchObject({ level: 'warn', service: 'scanner', team_id: team.teamId });
      expect(retry.reason).toMatch(/unavailable/i);
    }
    // One warning per retry: every attempt but the last met costs down, planning; then one shard, one merge.
    expect(patient.runs.get(scanId)).toBe(retries.length + 1);
    expect(patient.shards.get(scanId)).toBe(1);
    expect(patient.merges.get(scanId)).toBe(1);

    // Completed once, charged once, never refunded.
    await eventually(() => (eventsOf(patient, scanId).length > 0 ? true : undefined));
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(eventsOf(patient, scanId)).toEqual(['scanner.scan.completed']);
    expect(await ledger(scanId)).toEqual([{ credits: '1', refunded_at: null }]);
    expect(await balance()).toBe(before - 1);
  }, 60_000);

  it('Postgres going away while the findings are written: retried, completed once with its findings', async () => {
    const projectId = newProject();
    const before = await balance();
    postgresGoesAwayOnce = true;
    const { id } = await patient.client.createScan({ projectId }, team);
    const scan = await finished(patient, id);
    expect(postgresGoesAwayOnce).toBe(false);
    expect(scan).toMatchObject({ status: 'completed', creditsUsed: 1 });
    expect(retriesOf(id)).toHaveLength(1);
    expect(retriesOf(id)[0]!.reason).toMatch(/administrator command/);
    // The shard's outcome was stored before the merge met Postgres away: only the merge ran again.
    expect(patient.runs.get(id)).toBe(1);
    expect(patient.shards.get(id)).toBe(1);
    expect(patient.merges.get(id)).toBe(2);
    const rows = await findingRows(patient, projectId);
    expect(rows).toHaveLength(expectedFindings(connectionId, []).length);
    expect(scan.findingsCount).toBe(rows.length);
    await eventually(() => (eventsOf(patient, id).length > 0 ? true : undefined));
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(eventsOf(patient, id)).toEqual(['scanner.scan.completed']);
    expect(await ledger(id)).toEqual([{ credits: '1', refunded_at: null }]);
    expect(await balance()).toBe(before - 1);
  }, 60_000);

  it('a scan whose costs stays down past the retry deadline fails then, not before, and is refunded once', async () => {
    const projectId = newProject();
    const before = await balance();
    const { id } = await hurried.client.createScan({ projectId }, team);
    const scan = await finished(hurried, id);
    expect(scan.status).toBe('failed');
    expect(scan.error).toMatch(/stayed unavailable for more than 2.5 s; its credits are refunded/);
    expect(scan.creditsUsed).toBe(0);
    const ranFor = Number(scan.completedAt!.seconds - scan.startedAt!.seconds) * 1_000;
    expect(ranFor).toBeGreaterThanOrEqual(hurriedDeadlineMs - 1_000); // whole seconds on the wire
    // Tried at the start, after 1 s, and on the deadline (once more should a redelivery come a hair
    // early): the waits double, and the last one ends on the deadline rather than after it.
    const waits = retriesOf(id).map((r) => r.retry_in_ms as number);
    expect(waits[0]).toBe(1_000);
    expect(waits[1]).toBeGreaterThan(0);
    expect(waits[1]).toBeLessThanOrEqual(hurriedDeadlineMs - 1_000);
    expect(waits.length).toBeLessThanOrEqual(3);
    expect(hurried.runs.get(id)).toBe(waits.length + 1);

    await eventually(async () => ((await balance()) === before ? true : undefined));
    await eventually(() => (eventsOf(hurried, id).length > 0 ? true : undefined));
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(eventsOf(hurried, id)).toEqual(['scanner.scan.failed']);
    const [debit] = await ledger(id);
    expect(debit?.refunded_at).toBeInstanceOf(Date);
    // The ledger holds one refund: another attempt changes nothing.
    expect((await identityClient.refundScanCredits({ scanId: id }, team)).applied).toBe(false);
    expect(await balance()).toBe(before);
  }, 30_000);
});

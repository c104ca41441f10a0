import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createOutbox, decodeEvent, type CloudEvent } from '@costgov/bus';
import { events, identity, scanner } from '@costgov/contracts';
import type { Db } from '@costgov/db';
import { UnavailableError } from '@costgov/errors';
import { identityModule } from '@costgov/identity';
import { newId } from '@costgov/ids';
import { createLogger } from '@costgov/log';
import { createRpcClient, type RpcClient } from '@costgov/rpc';
import { startService, type RunningService } from '@costgov/runtime';
import { eventually, freshDb, testBus } from '@costgov/testing';
import type { RuleResult } from '../src/findings/record';
import { scannerModule } from '../src/module';
import type { ProjectLookup } from '../src/scans/project-lookup';
import { scanSweeper } from '../src/scans/sweeper';
import type { PlannedScan, ScanRunner, ShardSpec } from '../src/scans/run-rules';
import { scanCreditsOverRpc } from '../src/scans/scan-credits';
import { rangeShards } from '../src/scans/shards';

/*
 * Sharded scans with stand-in runners over a synthetic estate, two scanner processes' worth of workers in
 * this process (the API side with a worker, and a second worker) on one database and one work queue.
 * Runs on the embedded default and on real Postgres and NATS.
 */

const logger = createLogger('test', 'silent');
const perShard = 10;

/** A project's synthetic estate: `resources` ids, and how a shard or the merge behaves. */
interface Estate {
  resources: string[];
  /** Called before a shard returns: a test holds, fails or delays shards here. */
  beforeShard?: (shard: ShardSpec, worker: string) => Promise<void>;
  /** Called before the merge's project-wide rules return. */
  beforeMerge?: () => Promise<void>;
}

const estates = new Map<string, Estate>();
const projectIds = new Map<string, string[]>();
const lookup: ProjectLookup = {
  async project(_teamId, projectId) {
    return { id: projectId, status: 'active', connectionIds: projectIds.get(projectId) ?? [] };
  },
};

/** The stand-in's shards: `count` ranges of its ids in byte order (ASCII ids here), as costs cuts them. */
const rangesOf = (resources: string[], count: number) => {
  const sorted = [...resources].sort();
  return rangeShards(
    Array.from({ length: count - 1 }, (_, i) => sorted[Math.floor(((i + 1) * sorted.length) / count)]!),
  );
};
const inRange = (resource: string, shard: ShardSpec) =>
  (shard.from === undefined || resource >= shard.from) && (shard.to === undefined || resource < shard.to);
/** A resource's stand-in cost: highest in the middle of the estate, so no shard's edge decides it. */
const costOf = (resource: string) => {
  const n = Number(resource.split('-').pop());
  return 1_000 - Math.abs(n - 23) * 7;
};
/** Every fourth resource has a problem; the project has one project-wide finding. */
const flagged = (resource: string) => Number(resource.split('-').pop()) % 4 === 1;
const resultFor = (ruleId: string, resourceId: string): RuleResult => ({
  ruleId,
  resourceId,
  resourceType: 'instance',
  severity: 'medium',
  title: `${ruleId} on ${resourceId}`,
  description: 'A stand-in finding.',
  recommendation: 'None.',
  estimatedMonthlySavings: 1,
  currency: 'USD',
});

/** What each worker ran: shards (scan id, index) and merges. */
const shardRuns: Array<{ scanId: string; index: number; worker: string; context: unknown }> = [];
const mergeRuns: Array<{ scanId: string; worker: string }> = [];
/** The shard indexes run for a scan, every run counted, in order. */
const shardIndexesRun = (scanId: string) =>
  shardRuns
    .filter((r) => r.scanId === scanId)
    .map((r) => r.index)
    .sort();

const standIn = (worker: string): ScanRunner => ({
  async plan(work, _now, shardsFor) {
    const { resources } = estates.get(work.projectId)!;
    return {
      resources: resources.length,
      windowEnd: new Date(),
      shards: rangesOf(resources, shardsFor(resources.length)),
      // What the plan read for every shard: stored with the plan, handed to each shard.
      context: { plannedFor: work.scanId },
    };
  },
  async runShard(scan: PlannedScan, shard, progress) {
    shardRuns.push({ scanId: scan.scanId, index: shard.index, worker, context: scan.context });
    const estate = estates.get(scan.projectId)!;
    // The range the worker stored with the shard and handed back.
    const mine = estate.resources.filter((r) => inRange(r, shard));
    progress(mine.length);
    await estate.beforeShard?.(shard, worker);
    return {
      resourcesScanned: mine.length,
      results: mine.filter(flagged).map((r) => resultFor('idle-public-ip', r)),
      resourceIds: mine,
      // Left to the merge: the shard's costliest resource, judged against every shard's.
      pending: { costliest: mine.reduce((top, r) => (costOf(r) > costOf(top) ? r : top)) },
    };
  },
  async runProjectRules(scan, pending: ReadonlyArray<{ costliest: string }>) {
    mergeRuns.push({ scanId: scan.scanId, worker });
    await estates.get(scan.projectId)!.beforeMerge?.();
    const candidates = pending.map((p) => p.costliest);
    const costliest = candidates.reduce((top, r) => (costOf(r) > costOf(top) ? r : top));
    return [
      resultFor('inconsistent-tag-keys', `project:${scan.projectId}`),
      resultFor('costliest-of-scan', costliest),
    ];
  },
});

let bus: Awaited<ReturnType<typeof testBus>>;
let identityService: RunningService;
let identityClient: RpcClient<typeof identity.IdentityService>;
let api: RunningService;
let second: RunningService;
let client: RpcClient<typeof scanner.ScansService>;
let team: { teamId: string };
let scannerDb: Db;
const finished: CloudEvent[] = [];

const scansOptions = (worker: string) => ({
  projects: lookup,
  credits: scanCreditsOverRpc(identityClient),
  runner: standIn(worker),
  shardResources: perShard,
  maxShards: 64,
  concurrency: 1,
  heartbeatMs: 200,
  ackWaitMs: 5_000,
  staleMs: 30_000,
  retryDeadlineMs: 30_000,
});

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
  team = { teamId: (await identityClient.createTeam({ name: 'sharded', plan: 'team' })).id };
  await identityClient.grantScanCredits({ teamId: team.teamId, credits: 50n });

  const db = await freshDb('scanner');
  const shared: Db = { ...db, close: async () => undefined };
  api = await startService(scannerModule({ scans: { ...scansOptions('worker-a'), mode: 'all' } }), {
    logger,
    bus,
    openDb: async () => shared,
    dataDir: 'memory',
    grpcAddress: '127.0.0.1:0',
  });
  second = await startService(scannerModule({ scans: { ...scansOptions('worker-b'), mode: 'worker' } }), {
    logger,
    bus,
    openDb: async () => shared,
    dataDir: 'memory',
    grpcAddress: '127.0.0.1:0',
  });
  client = createRpcClient(scanner.ScansService, `127.0.0.1:${api.port}`);
  await bus.consume({
    durable: 'scan_shards_observer',
    types: ['scanner.scan.completed', 'scanner.scan.failed'],
    handler: async (event) => void finished.push(event),
  });
  scannerDb = db;
}, 60_000);

afterAll(async () => {
  client?.close();
  await second?.stop();
  await api?.stop();
  await scannerDb?.close();
  identityClient?.close();
  await identityService?.stop();
  await bus?.close();
});

const balance = async () => Number((await identityClient.getTeam({ id: team.teamId })).scanCredits);
const newProject = (resources: number, connections = 2, estate: Omit<Estate, 'resources'> = {}) => {
  const id = newId('project');
  projectIds.set(
    id,
    Array.from({ length: connections }, () => newId('connection')),
  );
  estates.set(id, { resources: Array.from({ length: resources }, (_, i) => `res-${i}`), ...estate });
  return id;
};
const done = (id: string) =>
  eventually(async () => {
    const scan = await client.getScan({ id }, team);
    return scan.status === 'completed' || scan.status === 'failed' ? scan : undefined;
  }, 20_000);
const finishEvents = (id: string) => finished.filter((e) => e.subject === id);
const findingsOf = async (projectId: string) =>
  (
    await api.db.query<{ rule_id: string; resource_id: string; scan_id: string; status: string }>(
      'SELECT rule_id, resource_id, scan_id, status FROM findings WHERE project_id = $1',
      [projectId],
    )
  ).rows;
const ledger = async (scanId: string) =>
  (
    await identityService.db.query<{ credits: string; refunded_at: Date | null }>(
      'SELECT credits::text, refunded_at FROM scan_credit_debits WHERE scan_id = $1',
      [scanId],
    )
  ).rows;

describe(`sharded scans (${process.env.DATABASE_URL ? 'postgres' : 'pglite'}, ${process.env.NATS_URL ? 'nats' : 'in-process bus'})`, () => {
  it('splits a scan into shards any worker runs, shows progress, merges once: the union of the findings, one event, credits once', async () => {
    const resources = 57;
    const shards = Math.ceil(resources / perShard);
    let releaseLast!: () => void;
    const lastHeld = new Promise<void>((resolve) => (releaseLast = resolve));
    const projectId = newProject(resources, 3, {
      // The last shard is held until the test has seen the others' progress; every shard takes a while,
      // so both workers get some.
      beforeShard: async (shard) => {
        if (shard.index === shard.count - 1) await lastHeld;
        else await new Promise((resolve) => setTimeout(resolve, 100));
      },
    });
    const before = await balance();
    const { id } = await client.createScan({ projectId }, team);

    // Progress while it runs: every shard but the held one stored, their resources counted.
    const inShard = (index: number) =>
      estates
        .get(projectId)!
        .resources.filter((r) => inRange(r, rangesOf(estates.get(projectId)!.resources, shards)[index]!))
        .length;
    const progress = await eventually(async () => {
      const scan = await client.getScan({ id }, team);
      return scan.shardsDone === shards - 1 ? scan : undefined;
    }, 20_000);
    expect(progress).toMatchObject({ status: 'running', shardsTotal: shards });
    const othersScanned = Array.from({ length: shards - 1 }, (_, i) => inShard(i)).reduce((a, b) => a + b, 0);
    // The held shard reports its count with its next heartbeat: the sum then covers every resource.
    expect(progress.resourcesScanned).toBeGreaterThanOrEqual(othersScanned);
    const reported = await eventually(async () => {
      const scan = await client.getScan({ id }, team);
      return scan.resourcesScanned === resources ? scan : undefined;
    });
    expect(reported).toMatchObject({ status: 'running', shardsDone: shards - 1 });
    expect(mergeRuns.filter((m) => m.scanId === id)).toHaveLength(0);
    releaseLast();

    const scan = await done(id);
    expect(scan).toMatchObject({
      status: 'completed',
      resourcesScanned: resources,
      shardsTotal: shards,
      shardsDone: shards,
      creditsUsed: 3,
    });
    // Each shard ran once, the two workers shared them, and the merge ran once.
    const runs = shardRuns.filter((r) => r.scanId === id);
    expect(runs.map((r) => r.index).sort((a, b) => a - b)).toEqual([...Array(shards).keys()]);
    expect(new Set(runs.map((r) => r.worker))).toEqual(new Set(['worker-a', 'worker-b']));
    expect(mergeRuns.filter((m) => m.scanId === id)).toHaveLength(1);
    // Every shard got the plan's context, which the merge then let go; the shards' stored ranges follow
    // one another, open at both ends.
    expect(runs.map((r) => r.context)).toEqual(runs.map(() => ({ plannedFor: id })));
    const plans = await scannerDb.query('SELECT 1 FROM scan_plans WHERE scan_id = $1', [id]);
    expect(plans.rows).toHaveLength(0);
    const { rows: stored } = await scannerDb.query<{ from: string | null; to: string | null }>(
      'SELECT resource_id_from AS from, resource_id_to AS to FROM scan_shards WHERE scan_id = $1 ORDER BY shard_index',
      [id],
    );
    expect(stored).toEqual(
      rangesOf(estates.get(projectId)!.resources, shards).map((r) => ({
        from: r.from ?? null,
        to: r.to ?? null,
      })),
    );

    // The findings: every flagged resource of every shard and the project-wide one, each once.
    const expected = estates
      .get(projectId)!
      .resources.filter(flagged)
      .map((r) => `idle-public-ip ${r}`)
      .concat(`inconsistent-tag-keys project:${projectId}`)
      .concat(
        `costliest-of-scan ${estates.get(projectId)!.resources.reduce((top, r) => (costOf(r) > costOf(top) ? r : top))}`,
      )
      .sort();
    const findings = await findingsOf(projectId);
    expect(findings.map((f) => `${f.rule_id} ${f.resource_id}`).sort()).toEqual(expected);
    expect(findings.every((f) => f.scan_id === id && f.status === 'open')).toBe(true);
    expect(scan.findingsCount).toBe(expected.length);

    // One completion event, with the scan's totals; one charge, no refund.
    await eventually(() => (finishEvents(id).length > 0 ? true : undefined));
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(finishEvents(id)).toHaveLength(1);
    expect(decodeEvent(events.ScanFinishedSchema, finishEvents(id)[0]!)).toMatchObject({
      status: 'completed',
      resourcesScanned: resources,
      findingsCount: expected.length,
    });
    expect(await ledger(id)).toEqual([{ credits: '3', refunded_at: null }]);
    expect(await balance()).toBe(before - 3);
  }, 30_000);

  it('a second sharded scan resolves what the shards no longer see, and only that', async () => {
    const resources = 30;
    const projectId = newProject(resources);
    const first = await done((await client.createScan({ projectId }, team)).id);
    expect(first.status).toBe('completed');
    // res-1 is dealt with: the next scan no longer flags it.
    const estate = estates.get(projectId)!;
    estates.set(projectId, { ...estate, resources: estate.resources.filter((r) => r !== 'res-1') });
    const second = await done((await client.createScan({ projectId }, team)).id);
    expect(second).toMatchObject({ status: 'completed', resourcesScanned: resources - 1, shardsTotal: 3 });
    const findings = await findingsOf(projectId);
    const resolved = findings.filter((f) => f.status === 'resolved').map((f) => f.resource_id);
    expect(resolved).toEqual(['res-1']);
    const open = findings.filter((f) => f.status === 'open');
    // The flagged resources left, the project-wide finding and the costliest resource's.
    expect(open).toHaveLength(estate.resources.filter(flagged).length - 1 + 2);
  }, 30_000);

  it('a shard that fails fails the scan once, with its error, and refunds it once', async () => {
    const projectId = newProject(35, 2, {
      beforeShard: async (shard) => {
        if (shard.index === 1) throw new Error('shard data unreadable');
        await new Promise((resolve) => setTimeout(resolve, 200));
      },
    });
    const before = await balance();
    const { id } = await client.createScan({ projectId }, team);
    const scan = await done(id);
    expect(scan).toMatchObject({
      status: 'failed',
      error: 'shard data unreadable',
      creditsUsed: 0,
      shardsTotal: 4,
    });
    await eventually(async () => ((await balance()) === before ? true : undefined));
    // The shards still running when it failed store nothing and finish nothing.
    await new Promise((resolve) => setTimeout(resolve, 600));
    expect(finishEvents(id).map((e) => e.type)).toEqual(['scanner.scan.failed']);
    expect(mergeRuns.filter((m) => m.scanId === id)).toHaveLength(0);
    expect(await findingsOf(projectId)).toEqual([]);
    const [debit] = await ledger(id);
    expect(debit?.refunded_at).toBeInstanceOf(Date);
    expect((await identityClient.refundScanCredits({ scanId: id }, team)).applied).toBe(false);
    expect(await balance()).toBe(before);
    expect((await client.getScan({ id }, team)).status).toBe('failed');
  }, 30_000);

  it('a shard that meets an outage is retried alone; the scan completes once with every finding', async () => {
    let outages = 1;
    const projectId = newProject(25, 1, {
      beforeShard: async (shard) => {
        if (shard.index === 2 && outages-- > 0) throw new UnavailableError();
      },
    });
    const { id } = await client.createScan({ projectId }, team);
    const scan = await done(id);
    expect(scan).toMatchObject({ status: 'completed', resourcesScanned: 25, shardsTotal: 3 });
    const runs = shardRuns.filter((r) => r.scanId === id).map((r) => r.index);
    // Shard 2 twice (the outage, then the retry), the others once.
    expect(runs.sort()).toEqual([0, 1, 2, 2]);
    expect(mergeRuns.filter((m) => m.scanId === id)).toHaveLength(1);
    const flaggedCount = estates.get(projectId)!.resources.filter(flagged).length;
    expect(scan.findingsCount).toBe(flaggedCount + 2);
    expect(await findingsOf(projectId)).toHaveLength(flaggedCount + 2);
    await eventually(() => (finishEvents(id).length > 0 ? true : undefined));
    expect(finishEvents(id).map((e) => e.type)).toEqual(['scanner.scan.completed']);
  }, 30_000);

  it('the sweeper leaves a scan alone while its shards report, though its own row is quiet, and fails it once they stop', async () => {
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    // Two shards, one per worker (concurrency 1), each running (heartbeats every 200 ms) until released.
    const projectId = newProject(2 * perShard, 1, { beforeShard: () => held });
    const before = await balance();
    const { id } = await client.createScan({ projectId }, team);
    await eventually(async () => {
      const { rows } = await api.db.query<{ n: number }>(
        `SELECT count(*)::int AS n FROM scan_shards WHERE scan_id = $1 AND status = 'running'`,
        [id],
      );
      return rows[0]!.n === 2 ? true : undefined;
    });
    // The scan row itself was last touched when it was planned: older than this sweeper's deadline.
    const staleMs = 1_000;
    await new Promise((resolve) => setTimeout(resolve, staleMs + 500));
    const { rows } = await api.db.query<{ heartbeat_at: Date }>(
      'SELECT heartbeat_at FROM scans WHERE id = $1',
      [id],
    );
    expect(Date.now() - rows[0]!.heartbeat_at.getTime()).toBeGreaterThan(staleMs);
    const sweeperAt = (offsetMs: number) =>
      scanSweeper({
        db: api.db,
        outbox: createOutbox({ source: 'scanner' }),
        now: () => new Date(Date.now() + offsetMs),
        logger,
        staleMs,
      });
    expect(await sweeperAt(0).sweep()).toBe(0);
    expect((await client.getScan({ id }, team)).status).toBe('running');

    // By a clock 10 s on, the shards too are silent: the scan is failed, once, and refunded.
    expect(await sweeperAt(10_000).sweep()).toBe(1);
    expect(await sweeperAt(10_000).sweep()).toBe(0);
    const scan = await client.getScan({ id }, team);
    expect(scan).toMatchObject({ status: 'failed', creditsUsed: 0 });
    expect(scan.error).toMatch(/stopped reporting progress/);
    // The shards' runs end later and store nothing; nothing is merged, nothing completes.
    release();
    await eventually(async () => ((await balance()) === before ? true : undefined));
    await new Promise((resolve) => setTimeout(resolve, 500));
    expect(finishEvents(id).map((e) => e.type)).toEqual(['scanner.scan.failed']);
    expect(mergeRuns.filter((m) => m.scanId === id)).toHaveLength(0);
    expect((await client.getScan({ id }, team)).status).toBe('failed');
  }, 30_000);

  /**
   * A planned scan of `resources` in three shards stored straight in the database, as if its messages
   * were lost (no worker ever got them): shards `done` hold what the stand-in would have stored.
   */
  const plantedScan = async (
    resources: number,
    shards: Array<'pending' | 'done'>,
    quietSinceMs: number,
    options: { startedAgoMs?: number; estate?: Omit<Estate, 'resources'> } = {},
  ): Promise<{ id: string; projectId: string }> => {
    const projectId = newProject(resources, 1, options.estate);
    const estate = estates.get(projectId)!;
    const id = newId('scan');
    const at = new Date(Date.now() - quietSinceMs);
    await api.db.query(
      `INSERT INTO scans (id, team_id, project_id, status, connection_ids, credits_used, worker_id, heartbeat_at,
         started_at, window_end, planned_now, shards_total)
       VALUES ($1, $2, $3, 'running', $4, 1, NULL, $5, $7, $5, $5, $6)`,
      [
        id,
        team.teamId,
        projectId,
        projectIds.get(projectId),
        at,
        shards.length,
        new Date(Date.now() - (options.startedAgoMs ?? quietSinceMs)),
      ],
    );
    const specs = rangesOf(estate.resources, shards.length);
    for (const [index, status] of shards.entries()) {
      const mine = estate.resources.filter((r) => inRange(r, specs[index]!));
      const stored = status === 'done';
      await api.db.query(
        `INSERT INTO scan_shards (scan_id, shard_index, shard_count, status, heartbeat_at, resource_id_from,
           resource_id_to, resources_scanned, results, resource_ids, pending, completed_at)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9::jsonb, $10, $11::jsonb, $12)`,
        [
          id,
          index,
          shards.length,
          status,
          at,
          specs[index]!.from ?? null,
          specs[index]!.to ?? null,
          stored ? mine.length : 0,
          stored ? JSON.stringify(mine.filter(flagged).map((r) => resultFor('idle-public-ip', r))) : null,
          stored ? mine : null,
          stored
            ? JSON.stringify({ costliest: mine.reduce((top, r) => (costOf(r) > costOf(top) ? r : top)) })
            : null,
          stored ? at : null,
        ],
      );
    }
    return { id, projectId };
  };
  const reconciler = (options: { offsetMs?: number; requeueAfterMs?: number; maxQuietMs?: number } = {}) =>
    scanSweeper({
      db: api.db,
      outbox: createOutbox({ source: 'scanner' }),
      now: () => new Date(Date.now() + (options.offsetMs ?? 0)),
      logger,
      staleMs: 1_000,
      requeueAfterMs: options.requeueAfterMs ?? 1_000,
      maxQuietMs: options.maxQuietMs ?? 3_600_000,
    });
  const expectedFindings = (projectId: string) =>
    estates.get(projectId)!.resources.filter(flagged).length + 2;

  it('shards whose messages were lost are queued again by the reconciler, once; the scan completes once', async () => {
    const { id, projectId } = await plantedScan(25, ['pending', 'pending', 'pending'], 5_000);
    // Waiting in the queue is no reason to fail it, though nothing reported for longer than staleMs.
    expect(await reconciler().sweep()).toBe(0);
    expect(await reconciler({ requeueAfterMs: 60_000 }).reconcile()).toEqual({
      plans: 0,
      shards: 0,
      merges: 0,
    });
    const sweeper = reconciler();
    expect(await sweeper.reconcile()).toEqual({ plans: 0, shards: 3, merges: 0 });
    // At most once per requeueAfterMs.
    expect(await sweeper.reconcile()).toEqual({ plans: 0, shards: 0, merges: 0 });
    const scan = await done(id);
    expect(scan).toMatchObject({ status: 'completed', resourcesScanned: 25, shardsDone: 3 });
    expect(scan.findingsCount).toBe(expectedFindings(projectId));
    expect(await findingsOf(projectId)).toHaveLength(expectedFindings(projectId));
    expect(shardIndexesRun(id)).toEqual([0, 1, 2]);
    expect(mergeRuns.filter((m) => m.scanId === id)).toHaveLength(1);
    await eventually(() => (finishEvents(id).length > 0 ? true : undefined));
    expect(finishEvents(id).map((e) => e.type)).toEqual(['scanner.scan.completed']);
    // Finished: nothing more to queue, even by a clock far on.
    expect(await reconciler({ offsetMs: 600_000 }).reconcile()).toEqual({ plans: 0, shards: 0, merges: 0 });
  }, 30_000);

  /** A scan created `agoMs` ago whose request no worker ever got: still pending. */
  const pendingScan = async (resources: number, agoMs: number) => {
    const projectId = newProject(resources, 1);
    const id = newId('scan');
    const at = new Date(Date.now() - agoMs);
    await api.db.query(
      `INSERT INTO scans (id, team_id, project_id, status, connection_ids, credits_used, created_at, updated_at)
       VALUES ($1, $2, $3, 'pending', $4, 1, $5, $5)`,
      [id, team.teamId, projectId, projectIds.get(projectId), at],
    );
    return { id, projectId };
  };

  it('a scan whose request was lost is queued again by the reconciler, once; it completes once', async () => {
    const { id, projectId } = await pendingScan(25, 5_000);
    expect(await reconciler().sweep()).toBe(0);
    expect(await reconciler({ requeueAfterMs: 60_000 }).reconcile()).toEqual({
      plans: 0,
      shards: 0,
      merges: 0,
    });
    const sweeper = reconciler();
    expect(await sweeper.reconcile()).toEqual({ plans: 1, shards: 0, merges: 0 });
    expect(await sweeper.reconcile()).toEqual({ plans: 0, shards: 0, merges: 0 });
    const scan = await done(id);
    expect(scan).toMatchObject({ status: 'completed', resourcesScanned: 25 });
    expect(scan.findingsCount).toBe(expectedFindings(projectId));
    await eventually(() => (finishEvents(id).length > 0 ? true : undefined));
    expect(finishEvents(id).map((e) => e.type)).toEqual(['scanner.scan.completed']);
  }, 30_000);

  it('a scan pending for maxQuietMs is failed once and given back its credits', async () => {
    const before = await balance();
    const { id } = await pendingScan(25, 0);
    await identityClient.debitScanCredits({ scanId: id, credits: 1n }, team); // what creating it charged
    const maxQuietMs = 3_600_000;
    expect(await reconciler({ offsetMs: maxQuietMs / 2, maxQuietMs }).sweep()).toBe(0);
    expect(await reconciler({ offsetMs: maxQuietMs + 1_000, maxQuietMs }).sweep()).toBe(1);
    expect(await reconciler({ offsetMs: maxQuietMs + 1_000, maxQuietMs }).sweep()).toBe(0);
    const scan = await client.getScan({ id }, team);
    expect(scan).toMatchObject({ status: 'failed', creditsUsed: 0 });
    expect(scan.error).toMatch(/made no progress for 60 min .*never taken/);
    await eventually(() => (finishEvents(id).length > 0 ? true : undefined));
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(finishEvents(id).map((e) => e.type)).toEqual(['scanner.scan.failed']);
    await eventually(async () => ((await balance()) === before ? true : undefined));
    expect((await ledger(id))[0]?.refunded_at).toBeInstanceOf(Date);
  }, 30_000);

  it('a shard waiting behind busy workers is re-published at doubling gaps, not every period', async () => {
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    // Planted a minute ago; both workers (concurrency 1) hold a shard until released, the third waits.
    const { id } = await plantedScan(25, ['pending', 'pending', 'pending'], 60_000, {
      estate: { beforeShard: () => held },
    });
    expect(await reconciler().reconcile()).toEqual({ plans: 0, shards: 3, merges: 0 });
    const waiting = async () => {
      const { rows } = await api.db.query<{ shard_index: number; requeued_at: Date }>(
        `SELECT shard_index, requeued_at FROM scan_shards WHERE scan_id = $1 AND status = 'pending'`,
        [id],
      );
      return rows.length === 1 ? rows[0] : undefined;
    };
    const first = await eventually(async () => {
      const { rows } = await api.db.query<{ n: number }>(
        `SELECT count(*)::int AS n FROM scan_shards WHERE scan_id = $1 AND status = 'running'`,
        [id],
      );
      return rows[0]!.n === 2 ? waiting() : undefined;
    });
    // It had waited a minute before it was re-published: not again within the next minute, though the
    // period is 30 s (a clock 40 s on; the held shards, which look quiet to that clock, may be).
    await reconciler({ offsetMs: 40_000, requeueAfterMs: 30_000 }).reconcile();
    expect((await waiting())!.requeued_at).toEqual(first!.requeued_at);
    // A minute and more on: once more.
    await reconciler({ offsetMs: 70_000, requeueAfterMs: 30_000 }).reconcile();
    expect((await waiting())!.requeued_at.getTime()).toBeGreaterThan(first!.requeued_at.getTime());
    release();
    const scan = await done(id);
    expect(scan).toMatchObject({ status: 'completed', resourcesScanned: 25, shardsDone: 3 });
    expect(mergeRuns.filter((m) => m.scanId === id)).toHaveLength(1);
    expect(shardIndexesRun(id)).toEqual([0, 1, 2]);
  }, 30_000);

  it('a merge whose message was lost is queued again by the reconciler; the scan completes once', async () => {
    const { id, projectId } = await plantedScan(25, ['done', 'done', 'done'], 5_000);
    expect(await reconciler().sweep()).toBe(0);
    expect(await reconciler().reconcile()).toEqual({ plans: 0, shards: 0, merges: 1 });
    const scan = await done(id);
    expect(scan).toMatchObject({ status: 'completed', resourcesScanned: 25, shardsDone: 3 });
    expect(scan.findingsCount).toBe(expectedFindings(projectId));
    expect(shardRuns.filter((r) => r.scanId === id)).toEqual([]);
    expect(mergeRuns.filter((m) => m.scanId === id)).toHaveLength(1);
    await eventually(() => (finishEvents(id).length > 0 ? true : undefined));
    expect(finishEvents(id).map((e) => e.type)).toEqual(['scanner.scan.completed']);
  }, 30_000);

  it('a scan without any progress for maxQuietMs is failed once, waiting shards or not, and gives up its shards’ results', async () => {
    const { id } = await plantedScan(25, ['done', 'pending', 'pending'], 0);
    const maxQuietMs = 3_600_000;
    // Past staleMs but within the bound: its shards wait in the queue, it is left to the reconciler.
    expect(await reconciler({ offsetMs: maxQuietMs / 2, maxQuietMs }).sweep()).toBe(0);
    expect(await reconciler({ offsetMs: maxQuietMs + 1_000, maxQuietMs }).sweep()).toBe(1);
    expect(await reconciler({ offsetMs: maxQuietMs + 1_000, maxQuietMs }).sweep()).toBe(0);
    const scan = await client.getScan({ id }, team);
    expect(scan).toMatchObject({ status: 'failed', creditsUsed: 0 });
    expect(scan.error).toMatch(/made no progress for 60 min/);
    const { rows } = await api.db.query<{ kept: number }>(
      `SELECT count(*)::int AS kept FROM scan_shards
       WHERE scan_id = $1 AND (results IS NOT NULL OR resource_ids IS NOT NULL OR pending IS NOT NULL)`,
      [id],
    );
    expect(rows[0]!.kept).toBe(0);
    await eventually(() => (finishEvents(id).length > 0 ? true : undefined));
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(finishEvents(id).map((e) => e.type)).toEqual(['scanner.scan.failed']);
  }, 30_000);

  it('a shard run long after the scan started still gets its retries: the deadline counts from its own outage', async () => {
    // The scan started ten minutes ago, far past the 30 s retry deadline; shard 1 meets one outage.
    let outages = 1;
    const { id, projectId } = await plantedScan(25, ['pending', 'pending', 'pending'], 5_000, {
      startedAgoMs: 600_000,
      estate: {
        beforeShard: async (shard) => {
          if (shard.index === 1 && outages-- > 0) throw new UnavailableError();
        },
      },
    });
    expect(await reconciler().reconcile()).toEqual({ plans: 0, shards: 3, merges: 0 });
    const scan = await done(id);
    expect(scan).toMatchObject({ status: 'completed', resourcesScanned: 25, shardsDone: 3 });
    expect(scan.findingsCount).toBe(expectedFindings(projectId));
    expect(shardIndexesRun(id)).toEqual([0, 1, 1, 2]);
    // Stored: the outage is over, nothing keeps its start.
    const { rows } = await api.db.query<{ n: number }>(
      'SELECT count(*)::int AS n FROM scan_shards WHERE scan_id = $1 AND retry_since IS NOT NULL',
      [id],
    );
    expect(rows[0]!.n).toBe(0);
  }, 30_000);

  it('a merge long after the scan started still gets its retries, counted from its own outage', async () => {
    let outages = 1;
    const { id, projectId } = await plantedScan(25, ['done', 'done', 'done'], 5_000, {
      startedAgoMs: 600_000,
      estate: {
        beforeMerge: async () => {
          if (outages-- > 0) throw new UnavailableError();
        },
      },
    });
    expect(await reconciler().reconcile()).toEqual({ plans: 0, shards: 0, merges: 1 });
    const scan = await done(id);
    expect(scan).toMatchObject({ status: 'completed', resourcesScanned: 25, shardsDone: 3 });
    expect(scan.findingsCount).toBe(expectedFindings(projectId));
    expect(mergeRuns.filter((m) => m.scanId === id)).toHaveLength(2);
    await eventually(() => (finishEvents(id).length > 0 ? true : undefined));
    expect(finishEvents(id).map((e) => e.type)).toEqual(['scanner.scan.completed']);
  }, 30_000);

  it('a scan failed by a shard gives up what its stored shards kept for the merge', async () => {
    const { id } = await plantedScan(25, ['done', 'pending', 'done'], 5_000, {
      estate: {
        beforeShard: async () => {
          throw new Error('shard data unreadable');
        },
      },
    });
    expect(await reconciler().reconcile()).toEqual({ plans: 0, shards: 1, merges: 0 });
    const scan = await done(id);
    expect(scan).toMatchObject({ status: 'failed', error: 'shard data unreadable', creditsUsed: 0 });
    const { rows } = await api.db.query<{ kept: number }>(
      `SELECT count(*)::int AS kept FROM scan_shards
       WHERE scan_id = $1 AND (results IS NOT NULL OR resource_ids IS NOT NULL OR pending IS NOT NULL)`,
      [id],
    );
    expect(rows[0]!.kept).toBe(0);
    await eventually(() => (finishEvents(id).length > 0 ? true : undefined));
    expect(finishEvents(id).map((e) => e.type)).toEqual(['scanner.scan.failed']);
  }, 30_000);

  it('a scan of few resources is one shard, run and merged by the worker that planned it', async () => {
    const projectId = newProject(perShard - 3);
    const { id } = await client.createScan({ projectId }, team);
    const scan = await done(id);
    expect(scan).toMatchObject({
      status: 'completed',
      resourcesScanned: perShard - 3,
      shardsTotal: 1,
      shardsDone: 1,
    });
    const [run] = shardRuns.filter((r) => r.scanId === id);
    expect(mergeRuns.filter((m) => m.scanId === id)).toEqual([{ scanId: id, worker: run!.worker }]);
  });
});

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createOutbox, decodeEvent, type CloudEvent } from '@costgov/bus';
import { events, identity, scanner } from '@costgov/contracts';
import {
  BadRequestError,
  ConflictError,
  DomainError,
  NotFoundError,
  UnavailableError,
} from '@costgov/errors';
import { identityModule } from '@costgov/identity';
import { newId } from '@costgov/ids';
import { createLogger } from '@costgov/log';
import { createRpcClient, type CallContext, type RpcClient } from '@costgov/rpc';
import { idempotentCalls, startService, type RunningService } from '@costgov/runtime';
import { eventually, freshDb, testBus } from '@costgov/testing';
import { scannerModule } from '../src/module';
import type { ProjectLookup, ScannedProject } from '../src/scans/project-lookup';
import { wholeScan, type RunRules, type ScanOutcome, type ScanRunner } from '../src/scans/run-rules';
import { scanCreditsOverRpc, type ScanCredits } from '../src/scans/scan-credits';
import { createScanOperation, scansFactory } from '../src/scans/scans';
import { abandonedChargeSweeper } from '../src/scans/abandoned-charges';

const logger = createLogger('test', 'silent');
const staleMs = 5_000;

/** Budgets stand-in: each team's projects. */
const projectsOf = new Map<string, Map<string, ScannedProject>>();
const projects: ProjectLookup = {
  async project(teamId, projectId) {
    const project = projectsOf.get(teamId)?.get(projectId);
    if (!project) throw new NotFoundError('Project', projectId);
    return project;
  },
};
const addProject = (teamId: string, connections: number, status = 'active'): string => {
  const id = newId('project');
  const connectionIds = Array.from({ length: connections }, () => newId('connection'));
  projectsOf.set(teamId, (projectsOf.get(teamId) ?? new Map()).set(id, { id, status, connectionIds }));
  return id;
};

/** The rules as each test wants them to behave for a project; counts every run per scan. */
const behaviour = new Map<string, RunRules>();
const runs = new Map<string, number>();
const runRules: RunRules = async (work, progress) => {
  runs.set(work.scanId, (runs.get(work.scanId) ?? 0) + 1);
  const run = behaviour.get(work.projectId);
  if (run) return run(work, progress);
  return { resourcesScanned: 0, results: [] };
};

/** Every scan here is one shard whose run is `run` (scan-shards.test.ts splits scans). */
const wholeScanRunner = (run: RunRules): ScanRunner => ({
  plan: async (_work, at) => ({ resources: 0, windowEnd: at, shards: [wholeScan] }),
  runShard: async (scan, _shard, progress) => {
    const outcome = await run(scan, progress);
    return { ...outcome, resourceIds: outcome.resourceIds ?? [] };
  },
  runProjectRules: async () => [],
});

// The clock the services see: tests move it forward to make a running scan's heartbeat stale.
let clockOffsetMs = 0;
const now = () => new Date(Date.now() + clockOffsetMs);
/** A sweeper grace under which a charge made this very millisecond is already past it (`created_at < now + 1`). */
const pastAtOnce = -1;

let bus: Awaited<ReturnType<typeof testBus>>;
let identityService: RunningService;
let service: RunningService;
let identityClient: RpcClient<typeof identity.IdentityService>;
let client: RpcClient<typeof scanner.ScansService>;
let teamA: { teamId: string };
let teamB: { teamId: string };
const received: CloudEvent[] = [];
const requested: CloudEvent[] = [];

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
  const db = await freshDb('scanner');
  service = await startService(
    scannerModule({
      scans: {
        projects,
        credits: scanCreditsOverRpc(identityClient),
        runner: wholeScanRunner(runRules),
        staleMs,
        sweepIntervalMs: 50,
        // Heartbeats never come within a test, so only the clock decides staleness.
        heartbeatMs: 60_000,
        ackWaitMs: 120_000,
      },
    }),
    { logger, bus, now, openDb: async () => db, dataDir: 'memory', grpcAddress: '127.0.0.1:0' },
  );
  client = createRpcClient(scanner.ScansService, `127.0.0.1:${service.port}`);
  teamA = { teamId: (await identityClient.createTeam({ name: 'scanning', plan: 'team' })).id };
  teamB = { teamId: (await identityClient.createTeam({ name: 'other', plan: 'team' })).id };
  await identityClient.grantScanCredits({ teamId: teamA.teamId, credits: 100n });
  await identityClient.grantScanCredits({ teamId: teamB.teamId, credits: 100n });
  await bus.consume({
    durable: 'scanner_test_observer',
    types: ['scanner.scan.>'],
    handler: async (event) => {
      received.push(event);
      if (event.type === 'scanner.scan.requested') requested.push(event);
    },
  });
});

afterAll(async () => {
  client?.close();
  identityClient?.close();
  await service?.stop();
  await identityService?.stop();
  await bus?.close();
});

const balance = async (team: { teamId: string }) =>
  Number((await identityClient.getTeam({ id: team.teamId })).scanCredits);

const finished = (scanId: string) =>
  eventually(async () => {
    const scan = await client.getScan({ id: scanId }, teamA);
    return scan.status === 'completed' || scan.status === 'failed' ? scan : undefined;
  });

/**
 * The API side of scans on the service's database with credits of the test's choice; with
 * `transactionsThatCommit`, every transaction after that many fails, as with a process killed there.
 */
function scansWith(credits: ScanCredits, transactionsThatCommit = Infinity, error = 'process killed') {
  let transactions = 0;
  return scansFactory({
    db: {
      ...service.db,
      transaction: (fn) =>
        ++transactions <= transactionsThatCommit
          ? service.db.transaction(fn)
          : Promise.reject(new Error(error)),
    },
    outbox: createOutbox({ source: 'scanner' }),
    newId,
    now,
    projects,
    credits,
    logger,
  });
}

const finishEvents = (scanId: string) =>
  received.filter((e) => e.subject === scanId && e.type !== 'scanner.scan.requested');

describe(`scans (${process.env.DATABASE_URL ? 'postgres' : 'pglite'}, ${process.env.NATS_URL ? 'nats' : 'in-process bus'})`, () => {
  describe('create', () => {
    it('debits one credit per connection, stores the scan pending and queues it', async () => {
      const projectId = addProject(teamA.teamId, 3);
      let release!: () => void;
      const held = new Promise<void>((resolve) => (release = resolve));
      behaviour.set(projectId, async () => {
        await held;
        return { resourcesScanned: 0, results: [] };
      });
      const before = await balance(teamA);
      const scan = await client.createScan({ projectId }, teamA);
      expect(scan.id).toMatch(/^scn_/);
      expect(scan).toMatchObject({ projectId, status: 'pending', creditsUsed: 3, resourcesScanned: 0 });
      expect(scan.createdAt).toBeDefined();
      expect(await balance(teamA)).toBe(before - 3);
      const event = await eventually(() => requested.find((e) => e.subject === scan.id));
      expect(decodeEvent(events.ScanRequestedSchema, event)).toMatchObject({
        scanId: scan.id,
        teamId: teamA.teamId,
        projectId,
        credits: 3,
        connectionIds: projectsOf.get(teamA.teamId)!.get(projectId)!.connectionIds,
      });
      release();
      expect((await finished(scan.id)).status).toBe('completed');
    });

    it('charges one credit for a project without connections', async () => {
      const projectId = addProject(teamA.teamId, 0);
      const before = await balance(teamA);
      const scan = await client.createScan({ projectId }, teamA);
      expect(scan.creditsUsed).toBe(1);
      expect(await balance(teamA)).toBe(before - 1);
    });

    it("answers 404 for an unknown project, another team's project and a malformed id, charging nothing", async () => {
      const theirs = addProject(teamB.teamId, 1);
      const before = await balance(teamA);
      for (const projectId of [newId('project'), theirs, 'not-an-id']) {
        await expect(client.createScan({ projectId }, teamA)).rejects.toBeInstanceOf(NotFoundError);
      }
      expect(await balance(teamA)).toBe(before);
    });

    it('answers 409 for an archived project, charging nothing', async () => {
      const projectId = addProject(teamA.teamId, 2, 'archived');
      const before = await balance(teamA);
      await expect(client.createScan({ projectId }, teamA)).rejects.toBeInstanceOf(ConflictError);
      expect(await balance(teamA)).toBe(before);
      expect((await client.listScans({ projectId }, teamA)).scans).toHaveLength(0);
    });

    it('answers 503 when identity cannot be asked, storing nothing', async () => {
      const projectId = addProject(teamA.teamId, 1);
      const down: ScanCredits = {
        debit: () => Promise.reject(new UnavailableError()),
        refund: () => Promise.reject(new UnavailableError()),
      };
      const scans = scansWith(down);
      await expect(scans.createScan(teamA.teamId, projectId)).rejects.toBeInstanceOf(UnavailableError);
      expect((await client.listScans({ projectId }, teamA)).meta?.totalCount).toBe(0);
    });

    it('refunds the debit when the scan cannot be stored after it', async () => {
      const projectId = addProject(teamA.teamId, 2);
      const before = await balance(teamA);
      const real = scanCreditsOverRpc(identityClient);
      const debited: string[] = [];
      // The charge is written down; the transaction that stores the scan is lost.
      const scans = scansWith(
        {
          ...real,
          debit: async (teamId, scanId, credits) => {
            debited.push(scanId);
            await real.debit(teamId, scanId, credits);
          },
        },
        1,
        'connection lost',
      );
      await expect(scans.createScan(teamA.teamId, projectId)).rejects.toThrow('connection lost');
      expect(await balance(teamA)).toBe(before);
      // It was debited, and the refund is already done: another one changes nothing.
      expect(debited).toHaveLength(1);
      expect((await identityClient.refundScanCredits({ scanId: debited[0]! }, teamA)).applied).toBe(false);
      expect((await client.listScans({ projectId }, teamA)).meta?.totalCount).toBe(0);
    });

    it('gives back, after its grace, a charge whose scan was never stored (the process died between)', async () => {
      const projectId = addProject(teamA.teamId, 2);
      const real = scanCreditsOverRpc(identityClient);
      // Charges the tests above left (identity down, a refund already made) are settled first.
      await abandonedChargeSweeper({
        db: service.db,
        credits: real,
        now,
        logger,
        graceMs: pastAtOnce,
      }).sweep();
      const before = await balance(teamA);
      // A process killed after its debit makes no refund either.
      const dying = scansWith({ ...real, refund: () => Promise.reject(new Error('process killed')) }, 1);
      await expect(dying.createScan(teamA.teamId, projectId)).rejects.toThrow('process killed');
      expect(await balance(teamA)).toBe(before - 2);
      const sweeper = abandonedChargeSweeper({ db: service.db, credits: real, now, logger, graceMs: 60_000 });
      expect(await sweeper.sweep()).toBe(0); // within the grace: an attempt may still be storing it
      clockOffsetMs += 60_001;
      try {
        expect(await sweeper.sweep()).toBe(1);
      } finally {
        clockOffsetMs -= 60_001;
      }
      expect(await balance(teamA)).toBe(before);
      expect(await sweeper.sweep()).toBe(0);
      expect((await client.listScans({ projectId }, teamA)).meta?.totalCount).toBe(0);
    });

    it('with an Idempotency-Key, makes one scan and one charge however often it is asked', async () => {
      const projectId = addProject(teamA.teamId, 3);
      const before = await balance(teamA);
      const keyed = (): CallContext => ({
        ...teamA,
        idempotencyKey: newId('scan'),
        idempotencyFingerprint: 'fp',
      });
      const first = keyed();
      const scan = await client.createScan({ projectId }, first);
      const again = { ...first, replayed: undefined };
      const replayed = await client.createScan({ projectId }, again);
      expect(replayed.id).toBe(scan.id);
      expect(replayed.status).toBe('pending');
      expect([first.replayed, again.replayed]).toEqual([undefined, true]);
      expect(await balance(teamA)).toBe(before - 3);
      const other = await client
        .createScan({ projectId }, { ...first, idempotencyFingerprint: 'another body' })
        .catch((e: unknown) => e);
      expect(other).toMatchObject({ code: 'validation_error', meta: { apiCode: 'idempotency_key_reused' } });
      expect(requested.filter((e) => e.subject === scan.id)).toHaveLength(1);
    });

    it('with an Idempotency-Key, a retry after a crash between charge and insert finishes that scan', async () => {
      const projectId = addProject(teamA.teamId, 2);
      const before = await balance(teamA);
      const real = scanCreditsOverRpc(identityClient);
      const dying = scansWith(real, 1);
      const once = idempotentCalls({ db: service.db, now });
      const ctx = (): CallContext => ({
        ...teamA,
        idempotencyKey: 'crash-key',
        idempotencyFingerprint: 'fp',
      });
      const toMessage = (scan: { id: string; status: string }) => ({ id: scan.id, status: scan.status });
      await expect(
        once(ctx(), createScanOperation, scanner.ScanSchema, toMessage, (effect) =>
          dying.createScan(teamA.teamId, projectId, effect),
        ),
      ).rejects.toThrow('process killed');
      expect(await balance(teamA)).toBe(before - 2); // charged, not stored, not refunded: a retry will finish it
      const retry = await client.createScan({ projectId }, ctx());
      expect(await balance(teamA)).toBe(before - 2);
      const list = await client.listScans({ projectId }, teamA);
      expect(list.scans.map((s) => s.id)).toEqual([retry.id]);
      // Nothing is left for the sweeper to give back.
      const sweeper = abandonedChargeSweeper({
        db: service.db,
        credits: real,
        now,
        logger,
        graceMs: pastAtOnce,
      });
      expect(await sweeper.sweep()).toBe(0);
      expect(await balance(teamA)).toBe(before - 2);
    });

    it('refunds itself when its charge was given back under it (a debit that landed after the sweep)', async () => {
      const projectId = addProject(teamA.teamId, 1);
      const real = scanCreditsOverRpc(identityClient);
      const sweeper = abandonedChargeSweeper({
        db: service.db,
        credits: real,
        now,
        logger,
        graceMs: pastAtOnce,
      });
      await sweeper.sweep();
      const before = await balance(teamA);
      let reachDebit!: () => void;
      const atDebit = new Promise<void>((resolve) => (reachDebit = resolve));
      let letDebit!: () => void;
      const debitMayGo = new Promise<void>((resolve) => (letDebit = resolve));
      const stalled = scansWith({
        ...real,
        debit: async (teamId, scanId, credits) => {
          reachDebit();
          await debitMayGo; // the attempt stalls past its grace before its debit reaches identity
          await real.debit(teamId, scanId, credits);
        },
      });
      const once = idempotentCalls({ db: service.db, now });
      const ctx = (): CallContext => ({
        ...teamA,
        idempotencyKey: 'stalled-key',
        idempotencyFingerprint: 'fp',
      });
      const attempt = once(
        ctx(),
        createScanOperation,
        scanner.ScanSchema,
        (scan: { id: string }) => ({ id: scan.id }),
        (effect) => stalled.createScan(teamA.teamId, projectId, effect),
      );
      await atDebit;
      expect(await sweeper.sweep()).toBe(1); // identity has nothing to refund yet
      letDebit();
      await expect(attempt).rejects.toBeInstanceOf(UnavailableError);
      expect(await balance(teamA)).toBe(before);
      expect((await client.listScans({ projectId }, teamA)).meta?.totalCount).toBe(0);
      // The key starts afresh: one scan, one credit.
      const retry = await client.createScan({ projectId }, ctx());
      expect(retry.status).toBe('pending');
      expect(await balance(teamA)).toBe(before - 1);
    });

    it('keeps the charge of a debit whose answer was lost, and a keyed retry finishes that scan', async () => {
      const projectId = addProject(teamA.teamId, 1);
      const real = scanCreditsOverRpc(identityClient);
      const before = await balance(teamA);
      const lostAnswer = scansWith({
        ...real,
        debit: async (teamId, scanId, credits) => {
          await real.debit(teamId, scanId, credits);
          throw new DomainError('internal_error', 'stream reset without a status');
        },
      });
      const once = idempotentCalls({ db: service.db, now });
      const ctx = (): CallContext => ({
        ...teamA,
        idempotencyKey: 'lost-answer-key',
        idempotencyFingerprint: 'fp',
      });
      await expect(
        once(
          ctx(),
          createScanOperation,
          scanner.ScanSchema,
          (scan: { id: string }) => ({ id: scan.id }),
          (effect) => lostAnswer.createScan(teamA.teamId, projectId, effect),
        ),
      ).rejects.toThrow('stream reset');
      const retry = await client.createScan({ projectId }, ctx());
      expect(await balance(teamA)).toBe(before - 1);
      expect((await client.listScans({ projectId }, teamA)).scans.map((scan) => scan.id)).toEqual([retry.id]);
    });

    it('answers 409 when the balance is short, leaving it and the scan list unchanged', async () => {
      const poor = { teamId: (await identityClient.createTeam({ name: 'poor', plan: 'team' })).id };
      await identityClient.grantScanCredits({ teamId: poor.teamId, credits: 2n });
      const projectId = addProject(poor.teamId, 3);
      const error = await client.createScan({ projectId }, poor).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(ConflictError);
      expect((error as ConflictError).message).toMatch(/needs 3 scan credits; the team has 2/);
      expect(await balance(poor)).toBe(2);
      expect((await client.listScans({}, poor)).meta?.totalCount).toBe(0);
    });
  });

  describe('read and list', () => {
    it('lists newest first with project and status filters and pagination; another team sees nothing', async () => {
      const projectId = addProject(teamA.teamId, 1);
      const other = addProject(teamA.teamId, 1);
      const ids: string[] = [];
      for (let i = 0; i < 3; i++) ids.push((await client.createScan({ projectId }, teamA)).id);
      await client.createScan({ projectId: other }, teamA);
      for (const id of ids) await finished(id);

      const first = await client.listScans({ projectId, page: { page: 1, perPage: 2 } }, teamA);
      expect(first.scans.map((s) => s.id)).toEqual([ids[2], ids[1]]);
      expect(first.meta).toMatchObject({ currentPage: 1, perPage: 2, totalPages: 2, totalCount: 3 });
      const second = await client.listScans({ projectId, page: { page: 2, perPage: 2 } }, teamA);
      expect(second.scans.map((s) => s.id)).toEqual([ids[0]]);

      const completed = await client.listScans({ projectId, status: 'completed' }, teamA);
      expect(completed.meta?.totalCount).toBe(3);
      expect((await client.listScans({ projectId, status: 'failed' }, teamA)).scans).toHaveLength(0);

      expect((await client.listScans({ projectId }, teamB)).meta?.totalCount).toBe(0);
      await expect(client.getScan({ id: ids[0]! }, teamB)).rejects.toBeInstanceOf(NotFoundError);
      await expect(client.getScan({ id: newId('scan') }, teamA)).rejects.toBeInstanceOf(NotFoundError);
      await expect(client.getScan({ id: 'nope' }, teamA)).rejects.toBeInstanceOf(NotFoundError);
    });

    it('refuses an unknown status filter and a bad page', async () => {
      await expect(client.listScans({ status: 'done' }, teamA)).rejects.toBeInstanceOf(BadRequestError);
      await expect(client.listScans({ page: { page: 1, perPage: 500 } }, teamA)).rejects.toBeInstanceOf(
        BadRequestError,
      );
    });
  });

  describe('workers', () => {
    it('runs a scan to completed, recording resources and findings, and publishes scanner.scan.completed', async () => {
      const projectId = addProject(teamA.teamId, 2);
      const outcome: ScanOutcome = {
        resourcesScanned: 42,
        results: ['i-1', 'i-2'].map((resourceId) => ({
          ruleId: 'idle-public-ip',
          resourceId,
          resourceType: 'ip',
          severity: 'medium' as const,
          title: 'Idle IP',
          description: 'An address attached to nothing.',
          recommendation: 'Release it.',
          estimatedMonthlySavings: 3.6,
          currency: 'USD',
        })),
      };
      behaviour.set(projectId, async () => outcome);
      const before = await balance(teamA);
      const { id } = await client.createScan({ projectId }, teamA);
      const scan = await finished(id);
      expect(scan).toMatchObject({
        status: 'completed',
        resourcesScanned: 42,
        findingsCount: 2,
        creditsUsed: 2,
      });
      expect(scan.startedAt).toBeDefined();
      expect(scan.completedAt).toBeDefined();
      expect(scan.error).toBeUndefined();
      // The read carries the scan's findings.
      expect(scan.findings.map((f) => f.resourceId).sort()).toEqual(['i-1', 'i-2']);
      expect(scan.findings[0]).toMatchObject({
        ruleId: 'idle-public-ip',
        scanId: id,
        status: 'open',
        projectId,
      });
      expect(await balance(teamA)).toBe(before - 2);
      const [event] = await eventually(() => (finishEvents(id).length ? finishEvents(id) : undefined));
      expect(event!.type).toBe('scanner.scan.completed');
      expect(decodeEvent(events.ScanFinishedSchema, event!)).toMatchObject({
        scanId: id,
        status: 'completed',
        resourcesScanned: 42,
        findingsCount: 2,
      });
    });

    it('fails a scan whose rules throw, with the error, and refunds its credits once', async () => {
      const projectId = addProject(teamA.teamId, 4);
      behaviour.set(projectId, async () => {
        throw new Error('cost data unreadable');
      });
      const before = await balance(teamA);
      const { id } = await client.createScan({ projectId }, teamA);
      const scan = await finished(id);
      expect(scan).toMatchObject({ status: 'failed', error: 'cost data unreadable', creditsUsed: 0 });
      await eventually(async () => ((await balance(teamA)) === before ? true : undefined));
      const [event] = await eventually(() => (finishEvents(id).length ? finishEvents(id) : undefined));
      expect(event!.type).toBe('scanner.scan.failed');
      // The ledger holds one refund: another attempt changes nothing.
      const again = await identityClient.refundScanCredits({ scanId: id }, teamA);
      expect(again.applied).toBe(false);
      expect(await balance(teamA)).toBe(before);
      expect(runs.get(id)).toBe(1);
    });

    it('does not run a completed scan again when its request is delivered again', async () => {
      const projectId = addProject(teamA.teamId, 1);
      const { id } = await client.createScan({ projectId }, teamA);
      expect((await finished(id)).status).toBe('completed');
      const before = await balance(teamA);
      const request = await eventually(() => requested.find((e) => e.subject === id));
      await bus.publish(request, { dedupeId: `${request.id}-again` });
      await eventually(() => (requested.filter((e) => e.subject === id).length === 2 ? true : undefined));
      // The worker saw the second delivery too (its consumer is older than the observer's second copy).
      await new Promise((resolve) => setTimeout(resolve, 300));
      expect(runs.get(id)).toBe(1);
      expect((await client.getScan({ id }, teamA)).status).toBe('completed');
      expect(finishEvents(id)).toHaveLength(1);
      expect(await balance(teamA)).toBe(before);
    });

    it('the sweeper fails a scan whose heartbeat went stale, refunds it, and its late run cannot complete it', async () => {
      const projectId = addProject(teamA.teamId, 2);
      let release!: () => void;
      const held = new Promise<void>((resolve) => (release = resolve));
      behaviour.set(projectId, async () => {
        await held;
        return { resourcesScanned: 7, results: [] };
      });
      const before = await balance(teamA);
      const { id } = await client.createScan({ projectId }, teamA);
      await eventually(async () =>
        (await client.getScan({ id }, teamA)).status === 'running' ? true : undefined,
      );
      expect(await balance(teamA)).toBe(before - 2);
      clockOffsetMs += staleMs + 1_000;
      const scan = await finished(id);
      expect(scan.status).toBe('failed');
      expect(scan.error).toMatch(/stopped reporting progress/);
      expect(scan.creditsUsed).toBe(0);
      await eventually(async () => ((await balance(teamA)) === before ? true : undefined));
      release();
      await new Promise((resolve) => setTimeout(resolve, 300));
      expect(await client.getScan({ id }, teamA)).toMatchObject({ status: 'failed', resourcesScanned: 0 });
      expect(finishEvents(id).map((e) => e.type)).toEqual(['scanner.scan.failed']);
      expect(await balance(teamA)).toBe(before);
    });
  });
});

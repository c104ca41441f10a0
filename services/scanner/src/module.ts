import path from 'node:path';
import type { DescService } from '@bufbuild/protobuf';
import { budgets, costs, identity, scanner } from '@costgov/contracts';
import { migrationsFrom } from '@costgov/db';
import { createRpcClient, type RpcClient } from '@costgov/rpc';
import type { ServiceContext, ServiceModule } from '@costgov/runtime';
import { scannerConfig, type ScannerConfig } from './config';
import { findingsFactory, findingsOfScan } from './findings/findings';
import { findingsPurgeConsumer, purgeProjectFindings } from './findings/purge';
import { findingMessage, findingsRpc } from './findings/rpc';
import { postureFactory } from './posture/posture';
import { postureRpc } from './posture/rpc';
import { postureSourcesOverRpc, type PostureSources } from './posture/sources';
import { allRules } from './rules/catalogue';
import { abandonedChargeSweeper } from './scans/abandoned-charges';
import { projectLookupOverRpc, type ProjectLookup } from './scans/project-lookup';
import { refundFailedScan } from './scans/refund-failed';
import { scanRunnerOverRpc } from './scans/rules-over-rpc';
import { scansRpc, type FindingsOfScan } from './scans/rpc';
import { noRulesRunner, slowedBy, type ScanRunner } from './scans/run-rules';
import { scanCreditsOverRpc, type ScanCredits } from './scans/scan-credits';
import { startScanWorker } from './scans/scan-worker';
import { scansFactory } from './scans/scans';
import { scanSweeper } from './scans/sweeper';

/** Where a side reads the other services; each defaults to its variable (IDENTITY_ADDR, BUDGETS_ADDR, COSTS_ADDR). */
interface Addresses {
  identityAddress?: string;
  budgetsAddress?: string;
  costsAddress?: string;
}

/**
 * Where the posture reads budgets, required tags and cost: the services at addresses, or (tests)
 * stand-ins. `sweepIntervalMs`: how often today's snapshot is taken of every scope asked for lately.
 */
export type PostureOptions = (Addresses | { sources: PostureSources }) & {
  sweepIntervalMs?: number;
  /** How long today's posture of a scope is reused (0: computed on every read); POSTURE_CACHE_MS. */
  cacheMs?: number;
};

/**
 * Where scans find projects (budgets), credits (identity) and cost data (costs): the services at
 * addresses, or (tests) stand-ins. The other settings are the scanner's variables unless given (tests).
 */
export type ScansOptions = (Addresses | { projects: ProjectLookup; credits: ScanCredits }) & {
  /** Which side this process is (SCANNER_MODE). */
  mode?: ScannerConfig['SCANNER_MODE'];
  /** How a scan is planned, its shards run and merged; by default the catalogue over costs' data (none with stand-ins). */
  runner?: ScanRunner;
  /** Resources per shard (SCAN_SHARD_RESOURCES). */
  shardResources?: number;
  /** Most shards of one scan (SCAN_MAX_SHARDS). */
  maxShards?: number;
  findingsOf?: FindingsOfScan;
  /** A running scan silent for this long is failed and refunded by the sweeper (SCAN_STALE_MS). */
  staleMs?: number;
  /**
   * How long after a shard's (plan's, merge's) first outage a scan whose dependency is unavailable is
   * still retried; past it, the scan fails and is refunded (SCAN_RETRY_DEADLINE_MS).
   */
  retryDeadlineMs?: number;
  /**
   * A scan's charge whose scan was not stored within this long (its attempt died between the charge and
   * the insert) is given back. Far above any attempt's duration (SCAN_CHARGE_GRACE_MS).
   */
  chargeGraceMs?: number;
  /** A shard or merge nobody took this long is re-published. Default 3 ack waits (at least 2 retry waits). */
  requeueAfterMs?: number;
  /** A running scan with no progress at all this long is failed, waiting work or not (SCAN_MAX_QUIET_MS). */
  maxQuietMs?: number;
  /** How often the sweeper looks. Default a quarter of staleMs, at most 30 s. */
  sweepIntervalMs?: number;
  /** SCAN_HEARTBEAT_MS */
  heartbeatMs?: number;
  /** SCAN_ACK_WAIT_MS */
  ackWaitMs?: number;
  /** SCAN_CONCURRENCY */
  concurrency?: number;
  /** Each shard waits this long after its rules (a slow shard, for tests and benchmarks; SCAN_EXTRA_DELAY_MS). */
  extraDelayMs?: number;
};

/**
 * The sides the process serves; `{}` reads the services at the configured addresses with the configured
 * settings, and (tests) stand-ins or settings given here replace them.
 */
export interface ScannerOptions {
  /** Serves PostureService when given, on the API side (not when SCANNER_MODE is `worker`). */
  posture?: PostureOptions;
  /** Serves ScansService and/or runs scan workers (by SCANNER_MODE, or `mode`) when given. */
  scans?: ScansOptions;
}

type Context = ServiceContext<ScannerConfig>;

/** Scanner: scans (API side and workers), findings, the rule catalogue and the cost posture. */
export function scannerModule(options: ScannerOptions = {}): ServiceModule<ScannerConfig> {
  return {
    name: 'scanner',
    migrations: migrationsFrom(path.join(__dirname, 'db/migrations')),
    config: scannerConfig,
    async start(ctx) {
      const { db, rpc, outbox, now, logger, consume, config } = ctx;
      const clients = clientsOf(config);
      const stops: Array<() => Promise<void>> = [];

      // Findings are read and purged wherever the service runs.
      rpc.add(
        scanner.FindingsService,
        findingsRpc(findingsFactory({ db, outbox, now }), () => allRules),
      );
      await consume({
        durable: findingsPurgeConsumer,
        types: ['budgets.project.deleted'],
        handler: (tx, event) => purgeProjectFindings(tx, event, logger),
      });

      // A worker-only process has no use for the posture.
      const mode = options.scans?.mode ?? config.SCANNER_MODE;
      if (options.posture && mode !== 'worker') stops.push(startPosture(ctx, options.posture, clients));
      if (options.scans) stops.push(await startScans(ctx, { ...options.scans, mode }, clients));
      return async () => {
        for (const stop of stops.reverse()) await stop();
        clients.close();
      };
    },
  };
}

/** One gRPC client per service and address, shared by the posture and the scans; closed with the module. */
function clientsOf(config: ScannerConfig) {
  const open = new Map<string, { close(): void }>();
  const deadline = { deadlineMs: config.RPC_DEADLINE_MS };
  const client = <S extends DescService>(service: S, address: string, deadlineMs = deadline.deadlineMs) => {
    const key = `${service.typeName} ${address} ${deadlineMs}`;
    if (!open.has(key)) open.set(key, createRpcClient(service, address, { deadlineMs }));
    return open.get(key) as RpcClient<S>;
  };
  return {
    identity: (a: Addresses) => client(identity.IdentityService, a.identityAddress ?? config.IDENTITY_ADDR),
    projects: (a: Addresses) => client(budgets.ProjectsService, a.budgetsAddress ?? config.BUDGETS_ADDR),
    budgets: (a: Addresses) => client(budgets.BudgetsService, a.budgetsAddress ?? config.BUDGETS_ADDR),
    connections: (a: Addresses) => client(costs.ConnectionsService, a.costsAddress ?? config.COSTS_ADDR),
    costData: (a: Addresses) => client(costs.CostDataService, a.costsAddress ?? config.COSTS_ADDR),
    // A scan reads a whole project's data: it gets far longer than an API call.
    scanData: (a: Addresses) => client(costs.ScanDataService, a.costsAddress ?? config.COSTS_ADDR, 120_000),
    rates: (a: Addresses) => client(costs.RatesService, a.costsAddress ?? config.COSTS_ADDR),
    close: () => {
      for (const opened of open.values()) opened.close();
      open.clear();
    },
  };
}

type Clients = ReturnType<typeof clientsOf>;

/** Serves PostureService and runs the daily snapshot sweep; resolves with what stops them. */
function startPosture(ctx: Context, options: PostureOptions, clients: Clients): () => Promise<void> {
  const sources =
    'sources' in options
      ? options.sources
      : postureSourcesOverRpc({
          projects: clients.projects(options),
          budgets: clients.budgets(options),
          identity: clients.identity(options),
          connections: clients.connections(options),
          costData: clients.costData(options),
        });
  const posture = postureFactory({
    db: ctx.db,
    now: ctx.now,
    sources,
    logger: ctx.logger,
    cacheMs: options.cacheMs ?? ctx.config.POSTURE_CACHE_MS,
  });
  ctx.rpc.add(scanner.PostureService, postureRpc(posture));
  let sweeping: Promise<unknown> = Promise.resolve();
  // Hourly by default: a day gets its snapshot within the hour after midnight UTC, whoever reads it.
  const timer = setInterval(() => {
    sweeping = posture
      .snapshotDue()
      .catch((error: unknown) => ctx.logger.warn({ err: error }, 'posture sweep failed'));
  }, options.sweepIntervalMs ?? 3_600_000);
  timer.unref();
  return async () => {
    clearInterval(timer);
    await sweeping;
  };
}

/** Serves ScansService and/or runs the scan workers, the refund consumer and the sweepers. */
async function startScans(
  ctx: Context,
  options: ScansOptions & { mode: ScannerConfig['SCANNER_MODE'] },
  clients: Clients,
): Promise<() => Promise<void>> {
  const { config } = ctx;
  const { mode } = options;
  const overRpc = !('projects' in options);
  const projects = overRpc ? projectLookupOverRpc(clients.projects(options)) : options.projects;
  const credits = overRpc ? scanCreditsOverRpc(clients.identity(options)) : options.credits;
  const runner =
    options.runner ??
    (overRpc
      ? scanRunnerOverRpc({
          scanData: clients.scanData(options),
          identityClient: clients.identity(options),
          minDailyImpact: config.ANOMALY_MIN_DAILY_IMPACT,
          rates: clients.rates(options),
          logger: ctx.logger,
        })
      : noRulesRunner);
  const findingsOf =
    options.findingsOf ??
    (async (teamId: string, scanId: string) =>
      (await findingsOfScan(ctx.db, teamId, scanId)).map(findingMessage));

  let charges: ReturnType<typeof abandonedChargeSweeper> | undefined;
  if (mode !== 'worker') {
    const scans = scansFactory({ ...ctx, projects, credits });
    ctx.rpc.add(scanner.ScansService, scansRpc(scans, ctx.once, findingsOf));
    // Charges of scans never stored, given back where scans are requested.
    const graceMs = options.chargeGraceMs ?? config.SCAN_CHARGE_GRACE_MS;
    charges = abandonedChargeSweeper({ ...ctx, credits, graceMs });
    charges.start(Math.min(Math.max(graceMs / 4, 100), 60_000));
  }
  await ctx.consume({
    durable: 'scanner_refund_failed',
    types: ['scanner.scan.failed'],
    handler: refundFailedScan(credits),
  });
  const staleMs = options.staleMs ?? config.SCAN_STALE_MS;
  // A retry waits at most a quarter of staleMs, so the sweeper never takes a waiting scan for a lost one.
  const retry = {
    deadlineMs: options.retryDeadlineMs ?? config.SCAN_RETRY_DEADLINE_MS,
    firstWaitMs: 1_000,
    maxWaitMs: Math.min(30_000, Math.floor(staleMs / 4)),
  };
  const ackWaitMs = options.ackWaitMs ?? config.SCAN_ACK_WAIT_MS;
  // Lost shard and merge messages are re-published once nothing took them for a few ack waits (and
  // past a retry's longest wait); a scan without any progress for SCAN_MAX_QUIET_MS is failed.
  const sweeper = scanSweeper({
    ...ctx,
    staleMs,
    requeueAfterMs: options.requeueAfterMs ?? Math.max(3 * ackWaitMs, 2 * retry.maxWaitMs),
    maxQuietMs: Math.max(options.maxQuietMs ?? config.SCAN_MAX_QUIET_MS, staleMs),
  });
  sweeper.start(options.sweepIntervalMs ?? Math.min(Math.max(staleMs / 4, 100), 30_000));
  const worker =
    mode === 'api'
      ? undefined
      : await startScanWorker({
          ...ctx,
          runner: slowedBy(runner, options.extraDelayMs ?? config.SCAN_EXTRA_DELAY_MS),
          sharding: {
            perShard: options.shardResources ?? config.SCAN_SHARD_RESOURCES,
            maxShards: options.maxShards ?? config.SCAN_MAX_SHARDS,
          },
          heartbeatMs: options.heartbeatMs ?? config.SCAN_HEARTBEAT_MS,
          ackWaitMs,
          concurrency: options.concurrency ?? config.SCAN_CONCURRENCY,
          retry,
        });
  return async () => {
    await worker?.stop();
    await sweeper.stop();
    await charges?.stop();
  };
}

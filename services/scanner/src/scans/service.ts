import { budgets, costs, identity, scanner } from '@costgov/contracts';
import { createRpcClient } from '@costgov/rpc';
import type { ServiceContext } from '@costgov/runtime';
import type { ScannerConfig } from '../config';
import { findingsOfScan } from '../findings/findings';
import { findingMessage } from '../findings/rpc';
import { projectLookupOverRpc, type ProjectLookup } from './project-lookup';
import { refundFailedScan } from './refund-failed';
import { runRulesOverRpc } from './rules-over-rpc';
import { scansRpc, type FindingsOfScan } from './rpc';
import { runNoRules, slowedBy, type RunRules } from './run-rules';
import { scanCreditsOverRpc, type ScanCredits } from './scan-credits';
import { scansFactory } from './scans';
import { startScanWorker } from './scan-worker';
import { scanSweeper } from './sweeper';
import { abandonedChargeSweeper } from './abandoned-charges';

/** api: ScansService only; worker: runs scans (gRPC serves health only); all: both. */
export type ScannerMode = 'api' | 'worker' | 'all';

/**
 * Where scans find projects (budgets), credits (identity) and cost data (costs): the services at
 * addresses (IDENTITY_ADDR, BUDGETS_ADDR and COSTS_ADDR unless given), or (tests) stand-ins. The other
 * settings are the scanner's variables unless given (tests).
 */
export type ScansOptions = (
  | { identityAddress?: string; budgetsAddress?: string; costsAddress?: string }
  | { projects: ProjectLookup; credits: ScanCredits }
) & {
  /** Which side this process is (SCANNER_MODE). */
  mode?: ScannerMode;
  /** How a scan runs its rules; by default the catalogue over costs' data (none with stand-ins). */
  runRules?: RunRules;
  findingsOf?: FindingsOfScan;
  /** A running scan silent for this long is failed and refunded by the sweeper (SCAN_STALE_MS). */
  staleMs?: number;
  /**
   * How long after its start a scan whose dependency is unavailable is still retried; past it, the scan
   * fails and is refunded (SCAN_RETRY_DEADLINE_MS).
   */
  retryDeadlineMs?: number;
  /**
   * A scan's charge whose scan was not stored within this long (its attempt died between the charge and
   * the insert) is given back. Far above any attempt's duration (SCAN_CHARGE_GRACE_MS).
   */
  chargeGraceMs?: number;
  /** How often the sweeper looks. Default a quarter of staleMs, at most 30 s. */
  sweepIntervalMs?: number;
  /** SCAN_HEARTBEAT_MS */
  heartbeatMs?: number;
  /** SCAN_ACK_WAIT_MS */
  ackWaitMs?: number;
  /** SCAN_CONCURRENCY */
  concurrency?: number;
  /** Each scan waits this long after its rules (a slow scan, for tests and benchmarks; SCAN_EXTRA_DELAY_MS). */
  extraDelayMs?: number;
};

/** Serves ScansService and/or runs the scan workers, the refund consumer and the sweeper. */
export async function startScans(
  ctx: Pick<
    ServiceContext<ScannerConfig>,
    'db' | 'bus' | 'rpc' | 'outbox' | 'newId' | 'now' | 'logger' | 'consume' | 'once' | 'config'
  >,
  options: ScansOptions,
): Promise<() => Promise<void>> {
  const { config } = ctx;
  const mode = options.mode ?? config.SCANNER_MODE;
  const clients: Array<{ close(): void }> = [];
  let projects: ProjectLookup;
  let credits: ScanCredits;
  let runRules = options.runRules ?? runNoRules;
  if ('projects' in options) ({ projects, credits } = options);
  else {
    const deadline = { deadlineMs: config.RPC_DEADLINE_MS };
    const projectsClient = createRpcClient(
      budgets.ProjectsService,
      options.budgetsAddress ?? config.BUDGETS_ADDR,
      deadline,
    );
    const identityClient = createRpcClient(
      identity.IdentityService,
      options.identityAddress ?? config.IDENTITY_ADDR,
      deadline,
    );
    clients.push(projectsClient, identityClient);
    projects = projectLookupOverRpc(projectsClient);
    credits = scanCreditsOverRpc(identityClient);
    if (!options.runRules) {
      // A scan reads a whole project's data: it gets far longer than an API call.
      const scanData = createRpcClient(costs.ScanDataService, options.costsAddress ?? config.COSTS_ADDR, {
        deadlineMs: 120_000,
      });
      clients.push(scanData);
      runRules = runRulesOverRpc({ scanData, identityClient, now: ctx.now });
    }
  }
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
  const sweeper = scanSweeper({ ...ctx, staleMs });
  sweeper.start(options.sweepIntervalMs ?? Math.min(Math.max(staleMs / 4, 100), 30_000));
  const worker =
    mode === 'api'
      ? undefined
      : await startScanWorker({
          ...ctx,
          runRules: slowedBy(runRules, options.extraDelayMs ?? config.SCAN_EXTRA_DELAY_MS),
          heartbeatMs: options.heartbeatMs ?? config.SCAN_HEARTBEAT_MS,
          ackWaitMs: options.ackWaitMs ?? config.SCAN_ACK_WAIT_MS,
          concurrency: options.concurrency ?? config.SCAN_CONCURRENCY,
          retry,
        });
  return async () => {
    await worker?.stop();
    await sweeper.stop();
    await charges?.stop();
    for (const client of clients) client.close();
  };
}

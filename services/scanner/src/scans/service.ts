import { budgets, costs, identity, scanner } from '@costgov/contracts';
import { createRpcClient } from '@costgov/rpc';
import type { ServiceContext } from '@costgov/runtime';
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
import { abandonedChargeSweeper, defaultChargeGraceMs } from './abandoned-charges';

/** api: ScansService only; worker: runs scans (gRPC serves health only); all: both. */
export type ScannerMode = 'api' | 'worker' | 'all';

/**
 * Where scans find projects (budgets) and credits (identity): services at addresses, or (tests)
 * stand-ins; how workers run and report; which side this process is.
 */
export type ScansOptions = (
  | { identityAddress: string; budgetsAddress: string; costsAddress: string; rpcDeadlineMs?: number }
  | { projects: ProjectLookup; credits: ScanCredits }
) & {
  mode?: ScannerMode;
  /** How a scan runs its rules; by default the catalogue over costs' data (none with stand-ins). */
  runRules?: RunRules;
  findingsOf?: FindingsOfScan;
  /** A running scan silent for this long is failed and refunded by the sweeper. Default 2 min. */
  staleMs?: number;
  /**
   * How long after its start a scan whose dependency is unavailable is still retried; past it, the scan
   * fails and is refunded. Default 90 s.
   */
  retryDeadlineMs?: number;
  /**
   * A scan's charge whose scan was not stored within this long (its attempt died between the charge and
   * the insert) is given back. Far above any attempt's duration. Default 10 min.
   */
  chargeGraceMs?: number;
  /** How often the sweeper looks. Default a quarter of staleMs, at most 30 s. */
  sweepIntervalMs?: number;
  heartbeatMs?: number;
  ackWaitMs?: number;
  concurrency?: number;
  /** Each scan waits this long after its rules (a slow scan, for tests and benchmarks). */
  extraDelayMs?: number;
};

/** Serves ScansService and/or runs the scan workers, the refund consumer and the sweeper. */
export async function startScans(
  ctx: Pick<
    ServiceContext,
    'db' | 'bus' | 'rpc' | 'outbox' | 'newId' | 'now' | 'logger' | 'consume' | 'once'
  >,
  options: ScansOptions,
): Promise<() => Promise<void>> {
  const mode = options.mode ?? 'all';
  const clients: Array<{ close(): void }> = [];
  let projects: ProjectLookup;
  let credits: ScanCredits;
  let runRules = options.runRules ?? runNoRules;
  if ('projects' in options) ({ projects, credits } = options);
  else {
    const deadline = { deadlineMs: options.rpcDeadlineMs };
    const projectsClient = createRpcClient(budgets.ProjectsService, options.budgetsAddress, deadline);
    const identityClient = createRpcClient(identity.IdentityService, options.identityAddress, deadline);
    clients.push(projectsClient, identityClient);
    projects = projectLookupOverRpc(projectsClient);
    credits = scanCreditsOverRpc(identityClient);
    if (!options.runRules) {
      // A scan reads a whole project's data: it gets far longer than an API call.
      const scanData = createRpcClient(costs.ScanDataService, options.costsAddress, { deadlineMs: 120_000 });
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
    const graceMs = options.chargeGraceMs ?? defaultChargeGraceMs;
    charges = abandonedChargeSweeper({ ...ctx, credits, graceMs });
    charges.start(Math.min(Math.max(graceMs / 4, 100), 60_000));
  }
  await ctx.consume({
    durable: 'scanner_refund_failed',
    types: ['scanner.scan.failed'],
    handler: refundFailedScan(credits),
  });
  const staleMs = options.staleMs ?? 120_000;
  // A retry waits at most a quarter of staleMs, so the sweeper never takes a waiting scan for a lost one.
  const retry = {
    deadlineMs: options.retryDeadlineMs ?? 90_000,
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
          runRules: slowedBy(runRules, options.extraDelayMs ?? 0),
          heartbeatMs: options.heartbeatMs ?? 5_000,
          ackWaitMs: options.ackWaitMs ?? 30_000,
          concurrency: options.concurrency ?? 2,
          retry,
        });
  return async () => {
    await worker?.stop();
    await sweeper.stop();
    await charges?.stop();
    for (const client of clients) client.close();
  };
}

import { budgets, costs, identity, scanner } from '@costgov/contracts';
import { createRpcClient } from '@costgov/rpc';
import type { ServiceContext } from '@costgov/runtime';
import type { ScannerConfig } from '../config';
import { postureFactory } from './posture';
import { postureRpc } from './rpc';
import { postureSourcesOverRpc, type PostureSources } from './sources';

/**
 * Where the posture reads budgets, required tags and cost: the services at addresses (IDENTITY_ADDR,
 * BUDGETS_ADDR and COSTS_ADDR unless given), or (tests) stand-ins. `sweepIntervalMs`: how often today's
 * snapshot is taken of every scope asked for lately.
 */
export type PostureOptions = (
  { identityAddress?: string; budgetsAddress?: string; costsAddress?: string } | { sources: PostureSources }
) & {
  sweepIntervalMs?: number;
  /** How long today's posture of a scope is reused (0: computed on every read); POSTURE_CACHE_MS. */
  cacheMs?: number;
};

/** Serves PostureService and runs the daily snapshot sweep; resolves with what stops them. */
export function startPosture(
  ctx: Pick<ServiceContext<ScannerConfig>, 'db' | 'rpc' | 'now' | 'logger' | 'config'>,
  options: PostureOptions,
): () => Promise<void> {
  const { config } = ctx;
  const clients: Array<{ close(): void }> = [];
  let sources: PostureSources;
  if ('sources' in options) sources = options.sources;
  else {
    const deadline = { deadlineMs: config.RPC_DEADLINE_MS };
    const budgetsAddress = options.budgetsAddress ?? config.BUDGETS_ADDR;
    const costsAddress = options.costsAddress ?? config.COSTS_ADDR;
    const rpcClients = {
      projects: createRpcClient(budgets.ProjectsService, budgetsAddress, deadline),
      budgets: createRpcClient(budgets.BudgetsService, budgetsAddress, deadline),
      identity: createRpcClient(
        identity.IdentityService,
        options.identityAddress ?? config.IDENTITY_ADDR,
        deadline,
      ),
      connections: createRpcClient(costs.ConnectionsService, costsAddress, deadline),
      costData: createRpcClient(costs.CostDataService, costsAddress, deadline),
    };
    clients.push(...Object.values(rpcClients));
    sources = postureSourcesOverRpc(rpcClients);
  }
  const posture = postureFactory({
    db: ctx.db,
    now: ctx.now,
    sources,
    logger: ctx.logger,
    cacheMs: options.cacheMs ?? config.POSTURE_CACHE_MS,
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
    for (const client of clients) client.close();
  };
}

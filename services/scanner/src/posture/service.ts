import { budgets, costs, identity, scanner } from '@costgov/contracts';
import { createRpcClient } from '@costgov/rpc';
import type { ServiceContext } from '@costgov/runtime';
import { postureFactory } from './posture';
import { postureRpc } from './rpc';
import { postureSourcesOverRpc, type PostureSources } from './sources';

/**
 * Where the posture reads budgets, required tags and cost: the services at addresses, or (tests)
 * stand-ins. `sweepIntervalMs`: how often today's snapshot is taken of every scope asked for lately.
 */
export type PostureOptions = (
  | { identityAddress: string; budgetsAddress: string; costsAddress: string; rpcDeadlineMs?: number }
  | { sources: PostureSources }
) & {
  sweepIntervalMs?: number;
  /** How long today's posture of a scope is reused (0: computed on every read). */
  cacheMs?: number;
};

/** Serves PostureService and runs the daily snapshot sweep; resolves with what stops them. */
export function startPosture(
  ctx: Pick<ServiceContext, 'db' | 'rpc' | 'now' | 'logger'>,
  options: PostureOptions,
): () => Promise<void> {
  const clients: Array<{ close(): void }> = [];
  let sources: PostureSources;
  if ('sources' in options) sources = options.sources;
  else {
    const deadline = { deadlineMs: options.rpcDeadlineMs };
    const rpcClients = {
      projects: createRpcClient(budgets.ProjectsService, options.budgetsAddress, deadline),
      budgets: createRpcClient(budgets.BudgetsService, options.budgetsAddress, deadline),
      identity: createRpcClient(identity.IdentityService, options.identityAddress, deadline),
      connections: createRpcClient(costs.ConnectionsService, options.costsAddress, deadline),
      costData: createRpcClient(costs.CostDataService, options.costsAddress, deadline),
    };
    clients.push(...Object.values(rpcClients));
    sources = postureSourcesOverRpc(rpcClients);
  }
  const posture = postureFactory({
    db: ctx.db,
    now: ctx.now,
    sources,
    logger: ctx.logger,
    cacheMs: options.cacheMs,
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

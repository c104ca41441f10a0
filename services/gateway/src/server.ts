import type { Server } from 'node:http';
import type { Bus, Consumer } from '@costgov/bus';
import { budgets, identity, scim } from '@costgov/contracts';
import type { Logger } from '@costgov/log';
import { checkHealth, createRpcClient } from '@costgov/rpc';
import { createGatewayApp } from './app';
import type { GatewayConfig } from './config';
import { authenticator } from './http/auth';
import { createLimiter } from './limiter';
import { loadOpenApiDocument } from './openapi/document';
import { listenForRevocations } from './revocations';

export interface RunningGateway {
  port: number;
  stop(): Promise<void>;
}

/**
 * Starts the HTTP gateway; `stop` refuses new connections and lets requests in flight finish. With a bus,
 * revocations reach this replica's authentication cache at once.
 */
export async function startGateway(
  config: GatewayConfig,
  logger: Logger,
  options: { bus?: Bus } = {},
): Promise<RunningGateway> {
  const rpcOptions = { deadlineMs: config.RPC_DEADLINE_MS };
  const identityClient = createRpcClient(identity.IdentityService, config.IDENTITY_ADDR, rpcOptions);
  const projectsClient = createRpcClient(budgets.ProjectsService, config.BUDGETS_ADDR, rpcOptions);
  const scimClient = createRpcClient(scim.ScimService, config.IDENTITY_ADDR, rpcOptions);
  const backends = {
    identity: config.IDENTITY_ADDR,
    budgets: config.BUDGETS_ADDR,
    violations: config.VIOLATIONS_ADDR,
  };
  const auth = authenticator({ identityClient, maxTtlMs: config.AUTH_CACHE_TTL_MS });
  const limiter = await createLimiter(config, logger);
  const revocations: Consumer | undefined =
    options.bus && (await listenForRevocations(options.bus, auth, logger));
  let draining = false;
  const app = createGatewayApp({
    logger,
    openapi: loadOpenApiDocument(),
    projects: projectsClient,
    scim: scimClient,
    publicBaseUrl: config.PUBLIC_BASE_URL,
    auth,
    limiter,
    draining: () => draining,
    backendsReady: async () =>
      Object.fromEntries(
        await Promise.all(
          Object.entries(backends).map(
            async ([name, address]) => [name, (await checkHealth(address)) === 'SERVING'] as const,
          ),
        ),
      ),
  });

  const server: Server = await new Promise((resolve) => {
    const s = app.listen(config.PORT, config.HOST, () => resolve(s));
  });
  const address = server.address();
  const port = typeof address === 'object' && address ? address.port : config.PORT;
  logger.info({ port }, 'gateway listening');

  let stopped: Promise<void> | undefined;
  return {
    port,
    stop: () => (stopped ??= stop()),
  };

  async function stop(): Promise<void> {
    draining = true;
    const closed = new Promise<void>((resolve) => server.close(() => resolve()));
    server.closeIdleConnections();
    const timer = setTimeout(() => server.closeAllConnections(), config.SHUTDOWN_GRACE_MS);
    await closed;
    clearTimeout(timer);
    await revocations?.stop();
    await limiter.close();
    identityClient.close();
    projectsClient.close();
    scimClient.close();
    logger.info('gateway stopped');
  }
}

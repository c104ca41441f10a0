import type { Server } from 'node:http';
import { budgets, identity } from '@costgov/contracts';
import type { Logger } from '@costgov/log';
import { checkHealth, createRpcClient } from '@costgov/rpc';
import { createGatewayApp } from './app';
import type { GatewayConfig } from './config';
import { loadOpenApiDocument } from './openapi/document';

export interface RunningGateway {
  port: number;
  stop(): Promise<void>;
}

type Addresses = Pick<GatewayConfig, 'IDENTITY_ADDR' | 'BUDGETS_ADDR' | 'VIOLATIONS_ADDR'>;

/** Starts the HTTP gateway; `stop` refuses new connections and lets requests in flight finish. */
export async function startGateway(
  config: Addresses &
    Pick<GatewayConfig, 'PORT' | 'HOST' | 'AUTH_CACHE_TTL_MS' | 'SHUTDOWN_GRACE_MS' | 'RPC_DEADLINE_MS'>,
  logger: Logger,
): Promise<RunningGateway> {
  const options = { deadlineMs: config.RPC_DEADLINE_MS };
  const identityClient = createRpcClient(identity.IdentityService, config.IDENTITY_ADDR, options);
  const projectsClient = createRpcClient(budgets.ProjectsService, config.BUDGETS_ADDR, options);
  const backends = {
    identity: config.IDENTITY_ADDR,
    budgets: config.BUDGETS_ADDR,
    violations: config.VIOLATIONS_ADDR,
  };
  let draining = false;
  const app = createGatewayApp({
    draining: () => draining,
    logger,
    openapi: loadOpenApiDocument(),
    identity: identityClient,
    projects: projectsClient,
    authCacheTtlMs: config.AUTH_CACHE_TTL_MS,
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

  return {
    port,
    async stop() {
      draining = true;
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      server.closeIdleConnections();
      const timer = setTimeout(() => server.closeAllConnections(), config.SHUTDOWN_GRACE_MS);
      await closed;
      clearTimeout(timer);
      identityClient.close();
      projectsClient.close();
      logger.info('gateway stopped');
    },
  };
}

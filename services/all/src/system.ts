import { budgetsConfig, budgetsModule } from '@costgov/budgets';
import { costsModule } from '@costgov/costs';
import { scannerConfig, scannerModule, scansOptionsFrom } from '@costgov/scanner';
import type { Bus } from '@costgov/bus';
import type { Db } from '@costgov/db';
import { gatewayConfig, startGateway, type GatewayConfig, type RunningGateway } from '@costgov/gateway';
import { identityModule, printBootstrap, type BootstrapResult } from '@costgov/identity';
import { notifierModule } from '@costgov/notifier';
import { loadConfig } from '@costgov/config';
import type { Logger } from '@costgov/log';
import { connectBus, startService, type RunningService } from '@costgov/runtime';
import { violationsModule } from '@costgov/violations';

export const systemConfig = gatewayConfig;

export interface RunningSystem {
  url: string;
  gateway: RunningGateway;
  services: RunningService[];
  bus: Bus;
  bootstrap?: BootstrapResult;
  stop(): Promise<void>;
}

/**
 * Every service in this one process: the embedded default (PGlite per service under DATA_DIR, the
 * in-process bus) or, with DATABASE_URL / NATS_URL set, the same on real Postgres and NATS. gRPC still
 * runs on loopback ports, so requests take the production path.
 */
export async function startSystem(
  config: GatewayConfig,
  logger: Logger,
  options: {
    env?: NodeJS.ProcessEnv;
    quietBootstrap?: boolean;
    openDb?: (service: string) => Promise<Db>;
    bus?: Bus;
    /** Bind every gRPC server to a free loopback port instead of the configured addresses (tests). */
    anyPorts?: boolean;
  } = {},
): Promise<RunningSystem> {
  const bus = options.bus ?? (await connectBus(config, logger));
  let bootstrap: BootstrapResult | undefined;
  const shared = {
    logger,
    bus,
    databaseUrl: config.DATABASE_URL,
    dataDir: config.DATA_DIR,
    env: options.env ?? process.env,
    openDb: options.openDb,
  };
  // The configured addresses (default 127.0.0.1:5005x) let the CLI reach identity while `npm start` runs.
  const at = (address: string) => ({ ...shared, grpcAddress: options.anyPorts ? '127.0.0.1:0' : address });
  const identity = await startService(
    identityModule({ onBootstrap: (result) => (bootstrap = result) }),
    at(config.IDENTITY_ADDR),
  );
  const costs = await startService(costsModule(), at(config.COSTS_ADDR));
  // Budgets asks identity (approvers) and costs (connections, spend) where they really listen (ports may be free ones).
  const budgetsSettings = loadConfig(budgetsConfig, shared.env);
  const budgets = await startService(
    budgetsModule({
      identityAddress: `127.0.0.1:${identity.port}`,
      costsAddress: `127.0.0.1:${costs.port}`,
      rpcDeadlineMs: config.RPC_DEADLINE_MS,
      evaluationIntervalMs: budgetsSettings.BUDGET_EVALUATION_INTERVAL_MS,
      projectCache: budgetsSettings.BUDGETS_PROJECT_CACHE === 'on',
    }),
    at(config.BUDGETS_ADDR),
  );
  const violations = await startService(violationsModule(), at(config.VIOLATIONS_ADDR));
  const scannerSettings = loadConfig(scannerConfig, shared.env);
  const scanner = await startService(
    scannerModule({
      posture: {
        identityAddress: `127.0.0.1:${identity.port}`,
        budgetsAddress: `127.0.0.1:${budgets.port}`,
        costsAddress: `127.0.0.1:${costs.port}`,
        rpcDeadlineMs: config.RPC_DEADLINE_MS,
        cacheMs: scannerSettings.POSTURE_CACHE_MS,
      },
      // SCANNER_MODE and the SCAN_* timings from the environment; scans run in this process by default.
      scans: {
        ...scansOptionsFrom(scannerSettings),
        identityAddress: `127.0.0.1:${identity.port}`,
        budgetsAddress: `127.0.0.1:${budgets.port}`,
        costsAddress: `127.0.0.1:${costs.port}`,
      },
    }),
    at(config.SCANNER_ADDR),
  );
  // Webhook deliveries: WEBHOOK_* settings from the environment.
  const notifier = await startService(notifierModule(), at(config.NOTIFIER_ADDR));
  const services = [identity, costs, budgets, violations, scanner, notifier];
  const gateway = await startGateway(
    {
      ...config,
      IDENTITY_ADDR: `127.0.0.1:${identity.port}`,
      BUDGETS_ADDR: `127.0.0.1:${budgets.port}`,
      VIOLATIONS_ADDR: `127.0.0.1:${violations.port}`,
      COSTS_ADDR: `127.0.0.1:${costs.port}`,
      SCANNER_ADDR: `127.0.0.1:${scanner.port}`,
      NOTIFIER_ADDR: `127.0.0.1:${notifier.port}`,
    },
    logger,
    { bus },
  );
  if (bootstrap && !options.quietBootstrap) printBootstrap(bootstrap);
  return {
    url: `http://${config.HOST === '0.0.0.0' ? 'localhost' : config.HOST}:${gateway.port}`,
    gateway,
    services,
    bus,
    bootstrap,
    async stop() {
      await gateway.stop();
      for (const service of [...services].reverse()) await service.stop();
      await bus.close();
    },
  };
}

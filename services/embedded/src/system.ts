import { budgetsConfig, budgetsModule } from '@costgov/budgets';
import { costsConfig, costsModule } from '@costgov/costs';
import { scannerConfig, scannerModule } from '@costgov/scanner';
import type { Bus } from '@costgov/bus';
import { allOf } from '@costgov/config';
import type { Db } from '@costgov/db';
import { gatewayConfig, startGateway, type GatewayConfig, type RunningGateway } from '@costgov/gateway';
import { identityConfig, identityModule, printBootstrap, type BootstrapResult } from '@costgov/identity';
import { notifierConfig, notifierModule } from '@costgov/notifier';
import type { Logger } from '@costgov/log';
import { connectBus, serviceConfig, startService, type RunningService } from '@costgov/runtime';
import { violationsConfig, violationsModule } from '@costgov/violations';

/** The gateway's variables: what startSystem is given. Each service reads its own from `env`. */
export const systemConfig = gatewayConfig;

/**
 * Every variable `npm start` reads: the gateway's and those of each service it runs, which mean what they
 * mean when that service runs on its own. Checked together before anything starts.
 */
export const embeddedConfig = allOf(
  systemConfig,
  serviceConfig,
  identityConfig,
  costsConfig,
  budgetsConfig,
  violationsConfig,
  scannerConfig,
  notifierConfig,
);

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
  // Costs asks budgets for budget periods at uploads, once both are up: the port is read then.
  let budgetsPort = 0;
  const costs = await startService(
    costsModule({ budgetsAddress: () => `127.0.0.1:${budgetsPort}` }),
    at(config.COSTS_ADDR),
  );
  // Each service reads its settings from `env` as it would on its own; only the addresses of the services
  // it calls are given: where they really listen (the ports may be free ones).
  const budgets = await startService(
    budgetsModule({ identityAddress: `127.0.0.1:${identity.port}`, costsAddress: `127.0.0.1:${costs.port}` }),
    at(config.BUDGETS_ADDR),
  );
  budgetsPort = budgets.port;
  const violations = await startService(violationsModule(), at(config.VIOLATIONS_ADDR));
  const dependencies = {
    identityAddress: `127.0.0.1:${identity.port}`,
    budgetsAddress: `127.0.0.1:${budgets.port}`,
    costsAddress: `127.0.0.1:${costs.port}`,
  };
  // SCANNER_MODE says which sides run here; scans run in this process by default.
  const scanner = await startService(
    scannerModule({ posture: dependencies, scans: dependencies }),
    at(config.SCANNER_ADDR),
  );
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

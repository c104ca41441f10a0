import {
  allOf,
  ConfigError,
  drainMsOf,
  loadConfigOrExit,
  metricsHost,
  port,
  shutdownDrainMs,
  z,
} from '@costgov/config';
import { createLogger } from '@costgov/log';
import { startMetricsServer } from '@costgov/telemetry';
import { connectBus } from './bus';
import { installProcessGuards } from './guards';
import { serviceConfigOf, startService, type ServiceModule } from './service';

/** What a service running as its own process reads besides its service's variables. */
export const standaloneConfig = (grpcPort: number) =>
  z.object({
    GRPC_HOST: z.string().default('0.0.0.0'),
    GRPC_PORT: port(grpcPort),
    METRICS_HOST: metricsHost,
    METRICS_PORT: port(9464),
    SHUTDOWN_DRAIN_MS: shutdownDrainMs,
  });

/**
 * Composition root of a service running as its own process: configuration from the environment,
 * NATS (or the in-process bus), its database, gRPC on GRPC_PORT, metrics on METRICS_HOST:METRICS_PORT, and a
 * graceful stop on SIGTERM/SIGINT.
 */
export async function runStandalone<C extends object>(
  module: ServiceModule<C>,
  defaults: { grpcPort: number },
): Promise<void> {
  // Every variable the process reads is checked before anything connects: a bad one ends it, named.
  // startService reads the service's own from the same environment.
  const config = loadConfigOrExit(allOf(standaloneConfig(defaults.grpcPort), serviceConfigOf(module)));
  const logger = createLogger(module.name, config.LOG_LEVEL);
  installProcessGuards(logger);
  // A start that cannot succeed (NATS unreachable, a refused setting, a taken port) ends the process
  // with its reason; the process guards would otherwise keep an empty process alive.
  const failedToStart = (error: unknown): never => {
    const message = error instanceof Error ? error.message : String(error);
    logger.fatal({ err: error }, `${module.name} failed to start`);
    console.error(`${module.name} failed to start: ${message}`);
    process.exit(error instanceof ConfigError ? 78 : 1);
  };
  const bus = await Promise.resolve(connectBus(config, logger)).catch(failedToStart);
  const service = await startService(module, {
    logger,
    bus,
    databaseUrl: config.DATABASE_URL,
    dataDir: config.DATA_DIR,
    grpcAddress: `${config.GRPC_HOST}:${config.GRPC_PORT}`,
  }).catch(failedToStart);
  const metricsServer = await startMetricsServer(config.METRICS_PORT, { host: config.METRICS_HOST, logger });
  let stopping = false;
  const stop = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    logger.info({ signal }, 'stopping');
    // Health answers NOT_SERVING (probes and gateways see it) while calls are still answered.
    service.drain();
    const drainMs = drainMsOf(config);
    if (drainMs > 0) await new Promise((resolve) => setTimeout(resolve, drainMs));
    await service.stop();
    await bus.close();
    await metricsServer.close();
    process.exit(0);
  };
  process.on('SIGTERM', () => void stop('SIGTERM'));
  process.on('SIGINT', () => void stop('SIGINT'));
}

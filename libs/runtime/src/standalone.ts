import { baseConfig, loadConfigOrExit, port, z } from '@costgov/config';
import { createLogger } from '@costgov/log';
import { startMetricsServer } from '@costgov/telemetry';
import { connectBus } from './bus';
import { startService, type ServiceModule } from './service';

/**
 * Composition root of a service running as its own process: configuration from the environment,
 * NATS (or the in-process bus), its database, gRPC on GRPC_PORT, metrics on METRICS_PORT, and a
 * graceful stop on SIGTERM/SIGINT.
 */
export async function runStandalone(module: ServiceModule, defaults: { grpcPort: number }): Promise<void> {
  const config = loadConfigOrExit(
    baseConfig.extend({
      GRPC_HOST: z.string().default('0.0.0.0'),
      GRPC_PORT: port(defaults.grpcPort),
      METRICS_PORT: port(9464),
    }),
  );
  const logger = createLogger(module.name, config.LOG_LEVEL);
  const bus = await connectBus(config, logger);
  const service = await startService(module, {
    logger,
    bus,
    databaseUrl: config.DATABASE_URL,
    dataDir: config.DATA_DIR,
    grpcAddress: `${config.GRPC_HOST}:${config.GRPC_PORT}`,
  });
  const metricsServer = await startMetricsServer(config.METRICS_PORT);
  let stopping = false;
  const stop = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    logger.info({ signal }, 'stopping');
    await service.stop();
    await bus.close();
    await metricsServer.close();
    process.exit(0);
  };
  process.on('SIGTERM', () => void stop('SIGTERM'));
  process.on('SIGINT', () => void stop('SIGINT'));
}

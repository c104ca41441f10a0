import './instrument';
import { loadConfigOrExit } from '@costgov/config';
import { createNatsBus } from '@costgov/bus';
import { createLogger } from '@costgov/log';
import { busObserver, installProcessGuards, streamLimitsOf, watchBus } from '@costgov/runtime';
import { startMetricsServer } from '@costgov/telemetry';
import { gatewayConfig } from './config';
import { startGateway } from './server';

async function main() {
  const config = loadConfigOrExit(gatewayConfig);
  const logger = createLogger('gateway', config.LOG_LEVEL);
  installProcessGuards(logger);
  // The gateway keeps no state, so it needs the bus only to hear of revocations; without NATS the cache TTL bounds them.
  const bus = config.NATS_URL
    ? await createNatsBus({
        url: config.NATS_URL,
        namespace: config.EVENT_NAMESPACE,
        logger,
        connectTimeoutMs: config.NATS_CONNECT_TIMEOUT_MS,
        observer: busObserver,
        streamLimits: streamLimitsOf(config),
      }).then(watchBus)
    : undefined;
  const gateway = await startGateway(config, logger, { bus }).catch(async (error: Error) => {
    logger.fatal({ err: error }, error.message);
    console.error(error.message);
    await bus?.close();
    process.exit(1);
  });
  const metricsServer = await startMetricsServer(config.METRICS_PORT, { host: config.METRICS_HOST, logger });
  let stopping = false;
  const stop = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    logger.info({ signal }, 'stopping');
    await gateway.stop();
    await bus?.close();
    await metricsServer.close();
    process.exit(0);
  };
  process.on('SIGTERM', () => void stop('SIGTERM'));
  process.on('SIGINT', () => void stop('SIGINT'));
}

main().catch((error: unknown) => {
  console.error('Failed to start the gateway:', error instanceof Error ? error.message : error);
  process.exit(1);
});

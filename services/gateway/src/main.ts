import './instrument';
import { loadConfigOrExit } from '@costgov/config';
import { createNatsBus } from '@costgov/bus';
import { createLogger } from '@costgov/log';
import { startMetricsServer } from '@costgov/telemetry';
import { gatewayConfig } from './config';
import { startGateway } from './server';

async function main() {
  const config = loadConfigOrExit(gatewayConfig);
  const logger = createLogger('gateway', config.LOG_LEVEL);
  // The gateway keeps no state, so it needs the bus only to hear of revocations; without NATS the cache TTL bounds them.
  const bus = config.NATS_URL
    ? await createNatsBus({ url: config.NATS_URL, namespace: config.EVENT_NAMESPACE, logger })
    : undefined;
  const gateway = await startGateway(config, logger, { bus });
  const metricsServer = await startMetricsServer(config.METRICS_PORT);
  const stop = async (signal: string) => {
    logger.info({ signal }, 'stopping');
    await gateway.stop();
    await bus?.close();
    await metricsServer.close();
    process.exit(0);
  };
  process.once('SIGTERM', () => void stop('SIGTERM'));
  process.once('SIGINT', () => void stop('SIGINT'));
}

void main();

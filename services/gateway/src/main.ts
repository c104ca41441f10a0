import './instrument';
import { loadConfigOrExit } from '@costgov/config';
import { createLogger } from '@costgov/log';
import { startMetricsServer } from '@costgov/telemetry';
import { gatewayConfig } from './config';
import { startGateway } from './server';

async function main() {
  const config = loadConfigOrExit(gatewayConfig);
  const logger = createLogger('gateway', config.LOG_LEVEL);
  const gateway = await startGateway(config, logger);
  const metricsServer = await startMetricsServer(config.METRICS_PORT);
  const stop = async (signal: string) => {
    logger.info({ signal }, 'stopping');
    await gateway.stop();
    await metricsServer.close();
    process.exit(0);
  };
  process.once('SIGTERM', () => void stop('SIGTERM'));
  process.once('SIGINT', () => void stop('SIGINT'));
}

void main();

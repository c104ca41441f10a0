import './instrument';
import { loadConfigOrExit } from '@costgov/config';
import { createLogger } from '@costgov/log';
import { startMetricsServer } from '@costgov/telemetry';
import { startSystem, systemConfig } from './system';

async function main() {
  const config = loadConfigOrExit(systemConfig);
  const logger = createLogger('costgov', config.LOG_LEVEL);
  const system = await startSystem(config, logger);
  const metricsServer = await startMetricsServer(config.METRICS_PORT).catch((error: Error) => {
    logger.warn({ err: error }, 'metrics port unavailable; /metrics not served');
    return undefined;
  });
  const mode = config.DATABASE_URL ? 'Postgres' : `PGlite under ${config.DATA_DIR}`;
  const busMode = config.NATS_URL ? 'NATS JetStream' : 'the in-process bus';
  process.stdout.write(
    `\nCost governance API listening on ${system.url} (${mode}, ${busMode}).\n` +
      `  OpenAPI document: ${system.url}/v1/openapi.json\n` +
      `  Metrics:          http://localhost:${metricsServer?.port ?? '-'}/metrics\n` +
      (system.bootstrap
        ? ''
        : '  API key:          the team was bootstrapped on an earlier start (GUARD_BOOTSTRAP_API_KEY or the key printed then).\n') +
      '\n',
  );
  const stop = async (signal: string) => {
    logger.info({ signal }, 'stopping');
    await system.stop();
    await metricsServer?.close();
    process.exit(0);
  };
  process.once('SIGTERM', () => void stop('SIGTERM'));
  process.once('SIGINT', () => void stop('SIGINT'));
}

main().catch((error: unknown) => {
  console.error('Failed to start:', error);
  process.exit(1);
});

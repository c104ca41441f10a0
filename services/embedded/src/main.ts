import './instrument';
import { loadConfigOrExit } from '@costgov/config';
import { createLogger } from '@costgov/log';
import { installProcessGuards } from '@costgov/runtime';
import { startMetricsServer } from '@costgov/telemetry';
import { embeddedConfig, startSystem } from './system';

/** A listening address as a URL's host: any-address means this machine, IPv6 goes in brackets. */
const urlHost = (host: string) =>
  host === '0.0.0.0' || host === '::' ? 'localhost' : host.includes(':') ? `[${host}]` : host;

async function main() {
  // The gateway's variables and every service's: a bad one ends the process, named, before anything starts.
  const config = loadConfigOrExit(embeddedConfig);
  const logger = createLogger('costgov', config.LOG_LEVEL);
  installProcessGuards(logger);
  const system = await startSystem(config, logger);
  const metricsServer = await startMetricsServer(config.METRICS_PORT, { host: config.METRICS_HOST, logger });
  const mode = config.DATABASE_URL ? 'Postgres' : `PGlite under ${config.DATA_DIR}`;
  const busMode = config.NATS_URL ? 'NATS JetStream' : 'the in-process bus';
  // stderr: stdout carries only JSON log lines, so that a log collector can parse every one of them.
  process.stderr.write(
    `\nCost governance API listening on ${system.url} (${mode}, ${busMode}).\n` +
      `  OpenAPI document: ${system.url}/v1/openapi.json\n` +
      `  Metrics:          http://${urlHost(config.METRICS_HOST)}:${metricsServer.port}/metrics\n` +
      (system.bootstrap
        ? ''
        : '  API key:          the team was bootstrapped on an earlier start (GUARD_BOOTSTRAP_API_KEY or the key printed then).\n') +
      '\n',
  );
  let stopping = false;
  const stop = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    logger.info({ signal }, 'stopping');
    await system.stop();
    await metricsServer.close();
    process.exit(0);
  };
  process.on('SIGTERM', () => void stop('SIGTERM'));
  process.on('SIGINT', () => void stop('SIGINT'));
}

main().catch((error: unknown) => {
  console.error('Failed to start:', error instanceof Error ? error.message : error);
  process.exit(1);
});

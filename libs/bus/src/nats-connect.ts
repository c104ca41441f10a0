import { jetstreamManager, type JetStreamManager } from '@nats-io/jetstream';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import type { Logger } from '@costgov/log';

export interface NatsConnectOptions {
  /** One server or a comma-separated list. */
  url: string;
  /** Connection name shown in the server's monitoring. */
  name?: string;
  logger: Logger;
  /** How long to keep trying the first connection (and JetStream's first answer) before giving up. */
  connectTimeoutMs: number;
}

/** A NATS URL list without credentials, for log lines and error messages. */
export const redactServers = (url: string): string => url.replace(/\/\/[^@/]*@/g, '//');

const firstDelayMs = 250;
const maxDelayMs = 5_000;

const reasonOf = (error: unknown): string => {
  if (!(error instanceof Error)) return String(error);
  const code = (error as { code?: unknown }).code;
  const message = error.message || (typeof code === 'string' ? code : error.name);
  const cause = error.cause instanceof Error ? error.cause.message : undefined;
  return cause && !message.includes(cause) ? `${message} (${cause})` : message;
};

/**
 * Connects to NATS and checks that JetStream answers, retrying with a logged reason and a backoff of
 * up to 5 s, and rejects with a clear message once `connectTimeoutMs` has passed: a wrong URL fails the
 * start instead of hanging it. Once connected, the client reconnects forever and logs each change,
 * so that a broker restart is ridden out.
 */
export async function connectNats({
  url,
  name,
  logger,
  connectTimeoutMs,
}: NatsConnectOptions): Promise<{ nc: NatsConnection; jsm: JetStreamManager }> {
  const servers = redactServers(url);
  const deadline = Date.now() + connectTimeoutMs;
  logger.info({ servers }, 'connecting to NATS');
  let delayMs = firstDelayMs;
  for (let attempt = 1; ; attempt++) {
    const remainingMs = Math.max(deadline - Date.now(), 1);
    // Bounded per attempt too: an address that drops packets would otherwise take the client's 20 s default.
    const attemptMs = Math.min(remainingMs, maxDelayMs);
    let nc: NatsConnection | undefined;
    try {
      nc = await connect({
        servers: url.split(','),
        name,
        timeout: attemptMs,
        maxReconnectAttempts: -1,
        reconnectTimeWait: 1_000,
      });
      const jsm = await jetstreamManager(nc, { timeout: attemptMs });
      void logConnectionStatus(nc, logger);
      void nc.closed().then((error) => {
        // Reconnecting forever, it closes on its own only for a reason an operator must fix.
        if (error) logger.error({ err: error }, 'NATS connection closed for good');
      });
      if (attempt > 1) logger.info({ servers, attempt }, 'connected to NATS');
      return { nc, jsm };
    } catch (error) {
      await nc?.close().catch(() => undefined);
      const reason = reasonOf(error);
      const leftMs = deadline - Date.now();
      if (leftMs <= 0) {
        throw new Error(
          `Cannot connect to NATS at ${servers} within ${connectTimeoutMs} ms (NATS_CONNECT_TIMEOUT_MS) after ${attempt} attempts: ${reason}`,
          { cause: error },
        );
      }
      const waitMs = Math.min(delayMs, leftMs);
      logger.warn({ servers, attempt, reason, retry_in_ms: waitMs }, 'cannot connect to NATS; retrying');
      await new Promise((resolve) => setTimeout(resolve, waitMs));
      delayMs = Math.min(delayMs * 2, maxDelayMs);
    }
  }
}

async function logConnectionStatus(nc: NatsConnection, log: Logger): Promise<void> {
  for await (const status of nc.status()) {
    if (status.type === 'disconnect') log.warn({ server: status.server }, 'NATS disconnected; reconnecting');
    else if (status.type === 'reconnect') log.info({ server: status.server }, 'NATS reconnected');
    else if (status.type === 'error') log.error({ err: status.error }, 'NATS connection error');
    else if (status.type === 'ldm')
      log.warn({ server: status.server }, 'NATS server entering lame duck mode');
  }
}

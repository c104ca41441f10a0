import { createMemoryBus, createNatsBus, type Bus } from '@costgov/bus';
import type { Logger } from '@costgov/log';

/**
 * NATS JetStream when NATS_URL is set; otherwise the in-process bus of the embedded default. NATS is
 * retried for NATS_CONNECT_TIMEOUT_MS at start, then this rejects with the reason for the caller to exit.
 */
export function connectBus(
  config: { NATS_URL?: string; NATS_CONNECT_TIMEOUT_MS: number; EVENT_NAMESPACE: string },
  logger: Logger,
): Promise<Bus> | Bus {
  return config.NATS_URL
    ? createNatsBus({
        url: config.NATS_URL,
        namespace: config.EVENT_NAMESPACE,
        logger,
        connectTimeoutMs: config.NATS_CONNECT_TIMEOUT_MS,
      })
    : createMemoryBus({ logger });
}

import { createMemoryBus, createNatsBus, type Bus } from '@costgov/bus';
import type { Logger } from '@costgov/log';

/** NATS JetStream when NATS_URL is set; otherwise the in-process bus of the embedded default. */
export function connectBus(
  config: { NATS_URL?: string; EVENT_NAMESPACE: string },
  logger: Logger,
): Promise<Bus> | Bus {
  return config.NATS_URL
    ? createNatsBus({ url: config.NATS_URL, namespace: config.EVENT_NAMESPACE, logger })
    : createMemoryBus({ logger });
}

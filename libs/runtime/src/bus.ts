import { createMemoryBus, createNatsBus, type Bus, type BusObserver, type StreamLimits } from '@costgov/bus';
import type { Logger } from '@costgov/log';
import { countRedelivery, watchConsumerLag } from '@costgov/telemetry';

/** Counts redeliveries per durable in the process's metrics (messaging_consumer_redeliveries_total). */
export const busObserver: BusObserver = { redelivered: countRedelivery };

/** Reports the lag of the bus's durables on /metrics until the bus is closed. */
export function watchBus<B extends Bus>(bus: B): B {
  if (!bus.consumerLag) return bus;
  const unwatch = watchConsumerLag(() => bus.consumerLag!());
  const close = bus.close.bind(bus);
  return Object.assign(bus, {
    async close() {
      unwatch();
      await close();
    },
  });
}

export interface StreamLimitVariables {
  NATS_STREAM_REPLICAS: number;
  NATS_STREAM_MAX_AGE_HOURS: number;
  NATS_STREAM_MAX_BYTES: number;
}

/** The streams' replicas and retention from NATS_STREAM_* (libs/config). */
export const streamLimitsOf = (config: StreamLimitVariables): StreamLimits => ({
  replicas: config.NATS_STREAM_REPLICAS,
  maxAgeMs: config.NATS_STREAM_MAX_AGE_HOURS * 3_600_000,
  maxBytes: config.NATS_STREAM_MAX_BYTES,
});

/**
 * NATS JetStream when NATS_URL is set; otherwise the in-process bus of the embedded default. NATS is
 * retried for NATS_CONNECT_TIMEOUT_MS at start, then this rejects with the reason for the caller to exit.
 * Either way the bus reports its consumers' lag and redeliveries on /metrics.
 */
export function connectBus(
  config: {
    NATS_URL?: string;
    NATS_CONNECT_TIMEOUT_MS: number;
    EVENT_NAMESPACE: string;
  } & StreamLimitVariables,
  logger: Logger,
): Promise<Bus> | Bus {
  return config.NATS_URL
    ? createNatsBus({
        url: config.NATS_URL,
        namespace: config.EVENT_NAMESPACE,
        logger,
        connectTimeoutMs: config.NATS_CONNECT_TIMEOUT_MS,
        observer: busObserver,
        streamLimits: streamLimitsOf(config),
      }).then(watchBus)
    : watchBus(createMemoryBus({ logger, namespace: config.EVENT_NAMESPACE, observer: busObserver }));
}

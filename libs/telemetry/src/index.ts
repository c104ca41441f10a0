export { startTelemetry } from './tracing';
export {
  countRedelivery,
  countUncaughtError,
  metrics,
  observeHttpRequest,
  observeRpcCall,
  startMetricsServer,
  watchConsumerLag,
  watchOutbox,
  type ConsumerLag,
  type MetricsServer,
  type MetricsServerOptions,
  type OutboxBacklog,
} from './metrics';

export { startTelemetry, telemetryConfig, type TelemetryOptions } from './tracing';
export { serverSpanRouteNamer, untraced } from './http-spans';
export { outgoingUrl, redactQuery, redacted } from './redaction';
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

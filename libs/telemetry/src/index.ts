export { startTelemetry } from './tracing';
export { metrics, startMetricsServer, type MetricsServer, type MetricsServerOptions } from './metrics';

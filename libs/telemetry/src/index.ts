export { startTelemetry } from './tracing';
export { metrics, startMetricsServer } from './metrics';

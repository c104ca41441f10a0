import { startTelemetry } from '@costgov/telemetry';

startTelemetry('notifier');

import { startTelemetry } from '@costgov/telemetry';

startTelemetry('gateway');

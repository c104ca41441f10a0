import { startTelemetry } from '@costgov/telemetry';

startTelemetry('costgov');

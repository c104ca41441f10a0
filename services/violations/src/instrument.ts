import { startTelemetry } from '@costgov/telemetry';

startTelemetry('violations');

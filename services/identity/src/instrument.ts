import { startTelemetry } from '@costgov/telemetry';

startTelemetry('identity');

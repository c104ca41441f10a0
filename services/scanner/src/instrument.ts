import { startTelemetry } from '@costgov/telemetry';

startTelemetry('scanner');

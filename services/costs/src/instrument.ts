import { startTelemetry } from '@costgov/telemetry';

startTelemetry('costs');

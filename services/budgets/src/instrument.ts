import { startTelemetry } from '@costgov/telemetry';

startTelemetry('budgets');

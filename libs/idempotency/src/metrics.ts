import { Counter, Gauge } from 'prom-client';
import { metrics } from '@costgov/telemetry';

/** Created once per process: prom-client refuses a second metric of the same name in one registry. */
export const idempotencyMetrics = {
  fallbackClaims: new Counter({
    name: 'idempotency_fallback_total',
    help: 'Idempotency keys claimed in per-process storage because Redis was unavailable.',
    registers: [metrics.registry],
  }),
  fallbackActive: new Gauge({
    name: 'idempotency_fallback_active',
    help: '1 while idempotency keys are kept per process because Redis is unavailable, else 0.',
    registers: [metrics.registry],
  }),
};

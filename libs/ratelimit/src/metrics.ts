import { Counter, Gauge } from 'prom-client';
import { metrics } from '@costgov/telemetry';

/** Created once per process: prom-client refuses a second metric of the same name in one registry. */
export const fallbackMetrics = {
  decisions: new Counter({
    name: 'ratelimit_fallback_total',
    help: 'Rate limit decisions answered by the per-process limiter because Redis was unavailable.',
    labelNames: ['policy'],
    registers: [metrics.registry],
  }),
  active: new Gauge({
    name: 'ratelimit_fallback_active',
    help: '1 while rate limits are enforced per process because Redis is unavailable, else 0.',
    registers: [metrics.registry],
  }),
};

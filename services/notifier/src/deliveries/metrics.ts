import { Counter, Histogram } from 'prom-client';
import { metrics } from '@costgov/telemetry';

/** Webhook delivery metrics, on the process's one registry (served on /metrics). */
export const deliveryMetrics = {
  attempts: new Counter({
    name: 'webhook_deliveries_total',
    help: 'Webhook delivery attempts by outcome: success (2xx), failure (any other answer, none, or a refused address).',
    labelNames: ['outcome', 'trigger'],
    registers: [metrics.registry],
  }),
  duration: new Histogram({
    name: 'webhook_delivery_duration_seconds',
    help: 'Time of one webhook delivery attempt, from the request to the answer (or the error).',
    labelNames: ['outcome'],
    buckets: [0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
    registers: [metrics.registry],
  }),
  exhausted: new Counter({
    name: 'webhook_deliveries_failed_total',
    help: 'Webhook deliveries given up: every scheduled attempt failed, or the endpoint was disabled as failing.',
    registers: [metrics.registry],
  }),
  disabled: new Counter({
    name: 'webhook_endpoints_disabled_total',
    help: 'Webhook endpoints disabled because every attempt failed for 5 days.',
    registers: [metrics.registry],
  }),
};

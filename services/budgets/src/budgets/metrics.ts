import { Counter } from 'prom-client';
import { metrics } from '@costgov/telemetry';

/** Budget evaluation metrics, on the process's one registry: served by the processes running budgets. */
export const evaluationMetrics = {
  evaluations: new Counter({
    name: 'budget_evaluations_total',
    help: 'Budget evaluations: evaluated, deferred to the sweep (costs or the database unavailable), or failed.',
    labelNames: ['outcome'],
    registers: [metrics.registry],
  }),
  unconvertedSpend: new Counter({
    name: 'budget_unconverted_spend_total',
    help: 'Budget evaluations that found spend in a currency without an exchange rate to the budget currency (not counted).',
    labelNames: ['from_currency', 'to_currency'],
    registers: [metrics.registry],
  }),
};

import { z } from '@costgov/config';

/**
 * What costs reads beyond the variables every service reads (libs/runtime's serviceConfig). A setting of
 * its own goes here, and in docs/configuration.md.
 */
export const costsConfig = z.object({
  /** budgets' gRPC address: an upload's billing periods are compared with the budgets' current periods. */
  BUDGETS_ADDR: z.string().min(1).default('127.0.0.1:50052'),
  /** How often raw rows past their team's retention are dropped (whole billing periods), in ms. */
  RAW_RETENTION_SWEEP_MS: z.coerce.number().int().min(1000).default(3_600_000),
});

export type CostsConfig = z.infer<typeof costsConfig>;

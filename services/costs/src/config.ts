import { z } from '@costgov/config';

/**
 * What costs reads beyond the variables every service reads (libs/runtime's serviceConfig). A setting of
 * its own goes here, and in docs/configuration.md.
 */
export const costsConfig = z.object({
  /** budgets' gRPC address: an upload's billing periods are compared with the budgets' current periods. */
  BUDGETS_ADDR: z.string().min(1).default('127.0.0.1:50052'),
});

export type CostsConfig = z.infer<typeof costsConfig>;

import { z } from '@costgov/config';

/**
 * What costs reads beyond the variables every service reads (libs/runtime's serviceConfig): nothing yet.
 * A setting of its own goes here, and in docs/configuration.md.
 */
export const costsConfig = z.object({});

export type CostsConfig = z.infer<typeof costsConfig>;

import { z } from '@costgov/config';

/**
 * What violations reads beyond the variables every service reads (libs/runtime's serviceConfig): nothing
 * yet. A setting of its own goes here, and in docs/configuration.md.
 */
export const violationsConfig = z.object({});

export type ViolationsConfig = z.infer<typeof violationsConfig>;

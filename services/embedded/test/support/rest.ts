import * as kit from '@costgov/testing';
import { startSystem, systemConfig, type RunningSystem } from '../../src/system';

export { expectError, restCaller, type CallOptions, type Reply } from '@costgov/testing';

export type RestSystem = kit.RestSystem<RunningSystem>;

/** @costgov/testing's startRestSystem over this package's embedded system. */
export const startRestSystem = (
  bootstrapKey: string,
  options: Parameters<typeof kit.startRestSystem>[2] = {},
): Promise<RestSystem> => kit.startRestSystem({ startSystem, systemConfig }, bootstrapKey, options);

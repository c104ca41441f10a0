import { baseConfig, z } from '@costgov/config';

/** What budgets reads beyond the variables every service reads (runStandalone parses those). */
export const budgetsConfig = baseConfig.pick({ RPC_DEADLINE_MS: true }).extend({
  /** identity's gRPC address: project approvers are checked against the team's users there. */
  IDENTITY_ADDR: z.string().min(1).default('127.0.0.1:50051'),
});

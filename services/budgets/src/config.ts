import { z } from '@costgov/config';

/** What budgets reads beyond the variables every service reads (libs/runtime's serviceConfig). */
export const budgetsConfig = z.object({
  /** identity's gRPC address: project approvers are checked against the team's users there. */
  IDENTITY_ADDR: z.string().min(1).default('127.0.0.1:50051'),
  /** costs' gRPC address: project connections are checked and budget spend is read there. */
  COSTS_ADDR: z.string().min(1).default('127.0.0.1:50054'),
  /** How often budgets left to evaluate are evaluated and period boundaries noticed. */
  BUDGET_EVALUATION_INTERVAL_MS: z.coerce.number().int().min(100).default(60_000),
  /**
   * `off` reads every project from the database; `on` answers repeated reads from memory, invalidated by
   * Postgres notifications behind a commit-order barrier (src/projects/detail-cache.ts).
   */
  BUDGETS_PROJECT_CACHE: z.enum(['on', 'off']).default('on'),
});

export type BudgetsConfig = z.infer<typeof budgetsConfig>;

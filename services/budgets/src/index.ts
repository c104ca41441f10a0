export { budgetsConfig, type BudgetsConfig } from './config';
export { budgetsModule, type BudgetsOptions } from './module';
export type { TeamUsers } from './projects/team-users';
export type { TeamConnections } from './projects/team-connections';
export type { SpendSource } from './budgets/spend';

export { budgetsConfig } from './config';
export { budgetsModule, type BudgetsOptions } from './module';
export type { TeamUsers } from './projects/team-users';

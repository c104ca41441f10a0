import './instrument';
import { loadConfigOrExit } from '@costgov/config';
import { runStandalone } from '@costgov/runtime';
import { budgetsConfig } from './config';
import { budgetsModule } from './module';

const config = loadConfigOrExit(budgetsConfig);
void runStandalone(
  budgetsModule({
    identityAddress: config.IDENTITY_ADDR,
    costsAddress: config.COSTS_ADDR,
    rpcDeadlineMs: config.RPC_DEADLINE_MS,
    evaluationIntervalMs: config.BUDGET_EVALUATION_INTERVAL_MS,
    projectCache: config.BUDGETS_PROJECT_CACHE === 'on',
  }),
  { grpcPort: 50052 },
);

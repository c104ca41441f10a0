import './instrument';
import { runStandalone } from '@costgov/runtime';
import { budgetsModule } from './module';

void runStandalone(budgetsModule(), { grpcPort: 50052 });

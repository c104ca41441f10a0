import './instrument';
import { runStandalone } from '@costgov/runtime';
import { violationsModule } from './module';

void runStandalone(violationsModule(), { grpcPort: 50053 });

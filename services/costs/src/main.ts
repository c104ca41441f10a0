import './instrument';
import { runStandalone } from '@costgov/runtime';
import { costsModule } from './module';

void runStandalone(costsModule(), { grpcPort: 50054 });

import './instrument';
import { runStandalone } from '@costgov/runtime';
import { notifierModule } from './module';

void runStandalone(notifierModule(), { grpcPort: 50057 });

import './instrument';
import { runStandalone } from '@costgov/runtime';
import { identityModule } from './module';

void runStandalone(identityModule(), { grpcPort: 50051 });

import './instrument';
import { runStandalone } from '@costgov/runtime';
import { scannerModule } from './module';

void runStandalone(scannerModule(), { grpcPort: 50055 });

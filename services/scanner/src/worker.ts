import './instrument';
import { runStandalone } from '@costgov/runtime';
import { scannerModule } from './module';

// A scan worker: the same service, taking scans from the work queue (no API traffic is routed to it).
void runStandalone(scannerModule(), { grpcPort: 50056 });

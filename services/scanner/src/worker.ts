import './instrument';
import { runStandalone } from '@costgov/runtime';
import { scannerModule } from './module';

// A scan worker: the same service, taking scans from the work queue; its gRPC port serves health only.
void runStandalone(scannerModule({ scans: { mode: 'worker' } }), { grpcPort: 50056 });

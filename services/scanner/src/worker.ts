import './instrument';
import { loadConfigOrExit } from '@costgov/config';
import { runStandalone } from '@costgov/runtime';
import { scannerConfig } from './config';
import { scannerModule } from './module';
import { scansOptionsFrom } from './scans/options';

// A scan worker: the same service, taking scans from the work queue; its gRPC port serves health only.
const config = loadConfigOrExit(scannerConfig);
void runStandalone(scannerModule({ scans: { ...scansOptionsFrom(config), mode: 'worker' } }), {
  grpcPort: 50056,
});

import './instrument';
import { loadConfigOrExit } from '@costgov/config';
import { runStandalone } from '@costgov/runtime';
import { scannerConfig } from './config';
import { scannerModule } from './module';
import { scansOptionsFrom } from './scans/options';

const config = loadConfigOrExit(scannerConfig);
// The posture is served by the API side; a worker-only process has no use for it.
const posture =
  config.SCANNER_MODE === 'worker'
    ? undefined
    : {
        identityAddress: config.IDENTITY_ADDR,
        budgetsAddress: config.BUDGETS_ADDR,
        costsAddress: config.COSTS_ADDR,
        rpcDeadlineMs: config.RPC_DEADLINE_MS,
        cacheMs: config.POSTURE_CACHE_MS,
      };
void runStandalone(scannerModule({ scans: scansOptionsFrom(config), posture }), { grpcPort: 50055 });

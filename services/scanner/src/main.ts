import './instrument';
import { runStandalone } from '@costgov/runtime';
import { scannerModule } from './module';

// Both sides as SCANNER_MODE says, over the services at IDENTITY_ADDR, BUDGETS_ADDR and COSTS_ADDR.
void runStandalone(scannerModule({ posture: {}, scans: {} }), { grpcPort: 50055 });

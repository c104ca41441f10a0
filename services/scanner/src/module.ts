import path from 'node:path';
import { migrationsFrom } from '@costgov/db';
import type { ServiceModule } from '@costgov/runtime';

/** Scanner: scans (API side and workers), findings, the rule catalogue and the cost posture. */
export function scannerModule(): ServiceModule {
  return {
    name: 'scanner',
    migrations: migrationsFrom(path.join(__dirname, 'db/migrations')),
    async start() {
      // The gRPC services, the work-queue consumer and the sweeper are added here as they are built.
    },
  };
}

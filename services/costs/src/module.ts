import path from 'node:path';
import { migrationsFrom } from '@costgov/db';
import type { ServiceModule } from '@costgov/runtime';

/** Costs: connections, FOCUS cost data (upload, rollups, spend queries) and exchange rates. */
export function costsModule(): ServiceModule {
  return {
    name: 'costs',
    migrations: migrationsFrom(path.join(__dirname, 'db/migrations')),
    async start() {
      // The gRPC services are added here as they are built (connections, cost data, rates).
    },
  };
}

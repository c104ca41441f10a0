import path from 'node:path';
import { costs } from '@costgov/contracts';
import { migrationsFrom } from '@costgov/db';
import type { ServiceModule } from '@costgov/runtime';
import { connectionsFactory } from './connections/connections';
import { connectionsRpc } from './connections/rpc';
import { ratesFactory } from './rates/rates';
import { ratesRpc } from './rates/rpc';

/** Costs: connections, FOCUS cost data (upload, rollups, spend queries) and exchange rates. */
export function costsModule(): ServiceModule {
  return {
    name: 'costs',
    migrations: migrationsFrom(path.join(__dirname, 'db/migrations')),
    async start({ db, rpc, outbox, newId, now }) {
      // The gRPC services are added here as they are built (connections, cost data, rates).
      rpc.add(costs.ConnectionsService, connectionsRpc(connectionsFactory({ db, outbox, newId, now })));
      rpc.add(costs.RatesService, ratesRpc(ratesFactory({ db, now })));
    },
  };
}

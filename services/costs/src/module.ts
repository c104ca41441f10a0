import path from 'node:path';
import { costs } from '@costgov/contracts';
import { migrationsFrom } from '@costgov/db';
import type { ServiceModule } from '@costgov/runtime';
import { costsConfig, type CostsConfig } from './config';
import { connectionsFactory } from './connections/connections';
import { connectionsRpc } from './connections/rpc';
import { purgeDeletedConnection } from './connections/purge';
import { costDataFactory } from './cost-data/ingest';
import { costDataRpc } from './cost-data/rpc';
import { ratesFactory } from './rates/rates';
import { ratesRpc } from './rates/rpc';
import { scanDataRpc } from './scan-data/rpc';
import { scanDataQueries } from './scan-data/scan-data';
import { spendQueries } from './spend/spend';

/** Costs: connections, FOCUS cost data (upload, rollups, spend queries) and exchange rates. */
export function costsModule(): ServiceModule<CostsConfig> {
  return {
    name: 'costs',
    migrations: migrationsFrom(path.join(__dirname, 'db/migrations')),
    config: costsConfig,
    async start({ db, rpc, outbox, newId, now, logger, consume, once }) {
      // The gRPC services are added here as they are built (connections, cost data, rates).
      rpc.add(costs.ConnectionsService, connectionsRpc(connectionsFactory({ db, outbox, newId, now }), once));
      rpc.add(costs.RatesService, ratesRpc(ratesFactory({ db, now })));
      await consume({
        durable: 'costs_connection_deleted',
        types: ['costs.connection.deleted'],
        handler: (tx, event) => purgeDeletedConnection(tx, event, logger),
      });
      const costData = costDataFactory({ db, outbox, now, logger });
      await costData.sweepAbandoned();
      rpc.add(costs.CostDataService, costDataRpc(costData, spendQueries({ db })));
      rpc.add(costs.ScanDataService, scanDataRpc(scanDataQueries({ db })));
    },
  };
}

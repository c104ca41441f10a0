import path from 'node:path';
import { costs } from '@costgov/contracts';
import { migrationsFrom } from '@costgov/db';
import type { ServiceModule } from '@costgov/runtime';
import { costsConfig, type CostsConfig } from './config';
import { connectionsFactory } from './connections/connections';
import { connectionsRpc } from './connections/rpc';
import { purgeDeletedConnection } from './connections/purge';
import { budgetPeriodsOverRpc, type BudgetPeriodSource } from './cost-data/budget-periods';
import { costDataFactory, uploadHeartbeat } from './cost-data/ingest';
import { costDataRpc } from './cost-data/rpc';
import { ratesFactory } from './rates/rates';
import { ratesRpc } from './rates/rpc';
import { retentionFactory } from './retention/retention';
import { retentionRpc } from './retention/rpc';
import { scanDataRpc } from './scan-data/rpc';
import { scanDataQueries } from './scan-data/scan-data';
import { spendQueries } from './spend/spend';

/**
 * Where costs asks budgets for the budget periods an upload is compared with: BUDGETS_ADDR unless
 * `budgetsAddress` gives it (read at the first upload: the embedded system starts budgets after costs),
 * or (tests) a stand-in.
 */
export type CostsOptions = { budgetsAddress?: () => string } | { budgetPeriods: BudgetPeriodSource };

/** Costs: connections, FOCUS cost data (upload, rollups, spend queries) and exchange rates. */
export function costsModule(options: CostsOptions = {}): ServiceModule<CostsConfig> {
  return {
    name: 'costs',
    migrations: migrationsFrom(path.join(__dirname, 'db/migrations')),
    config: costsConfig,
    async start({ db, rpc, outbox, newId, now, logger, consume, once, config }) {
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
      const budgetPeriods =
        'budgetPeriods' in options
          ? options.budgetPeriods
          : budgetPeriodsOverRpc(options.budgetsAddress ?? (() => config.BUDGETS_ADDR));
      rpc.add(
        costs.CostDataService,
        costDataRpc(costData, spendQueries({ db }), { source: budgetPeriods, logger }),
      );
      rpc.add(costs.ScanDataService, scanDataRpc(scanDataQueries({ db, now })));
      const retention = retentionFactory({ db, now, logger });
      rpc.add(costs.RetentionService, retentionRpc(retention));
      // Raw rows past their team's retention go in whole billing periods, now and then; rollups stay.
      let sweeping: Promise<unknown> = Promise.resolve();
      const sweepRetention = () => {
        sweeping = retention
          .sweep()
          .catch((error: unknown) => logger.warn({ err: error }, 'raw cost rows retention sweep failed'));
      };
      sweepRetention();
      const timer = setInterval(sweepRetention, config.RAW_RETENTION_SWEEP_MS);
      timer.unref();
      // Load tables of uploads whose process died (no heartbeat): dropped within minutes, not at a restart.
      let sweepingUploads: Promise<unknown> = Promise.resolve();
      const uploadsTimer = setInterval(() => {
        sweepingUploads = costData
          .sweepAbandoned()
          .catch((error: unknown) => logger.warn({ err: error }, 'abandoned cost data uploads sweep failed'));
      }, uploadHeartbeat.staleAfterMs / 2);
      uploadsTimer.unref();
      return async () => {
        clearInterval(timer);
        clearInterval(uploadsTimer);
        await Promise.all([sweeping, sweepingUploads]);
        await budgetPeriods.close();
      };
    },
  };
}

import { costs } from '@costgov/contracts';
import { startServiceUnderTest, type ServiceUnderTestOptions } from '@costgov/testing';
import { costsModule } from '../src/module';

const clients = {
  connections: costs.ConnectionsService,
  costData: costs.CostDataService,
  rates: costs.RatesService,
  scanData: costs.ScanDataService,
};

/** No budgets read any connection: uploads are compared with nothing (REST tests cover the warning). */
const noBudgets = { periodsOf: async () => [], close: () => undefined };

/** The costs service on a fresh database and bus, with a client of each of its gRPC services. */
export const startCosts = (options: Omit<ServiceUnderTestOptions<typeof clients>, 'clients'> = {}) =>
  startServiceUnderTest(costsModule({ budgetPeriods: noBudgets }), { ...options, clients });

export type CostsUnderTest = Awaited<ReturnType<typeof startCosts>>;

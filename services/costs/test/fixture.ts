import { costs } from '@costgov/contracts';
import { startServiceUnderTest, type ServiceUnderTestOptions } from '@costgov/testing';
import { costsModule } from '../src/module';

const clients = {
  connections: costs.ConnectionsService,
  costData: costs.CostDataService,
  rates: costs.RatesService,
  scanData: costs.ScanDataService,
};

/** The costs service on a fresh database and bus, with a client of each of its gRPC services. */
export const startCosts = (options: Omit<ServiceUnderTestOptions<typeof clients>, 'clients'> = {}) =>
  startServiceUnderTest(costsModule(), { ...options, clients });

export type CostsUnderTest = Awaited<ReturnType<typeof startCosts>>;

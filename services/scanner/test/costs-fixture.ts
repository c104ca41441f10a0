import { costs } from '@costgov/contracts';
import { costsModule } from '@costgov/costs';
import type { CallContext, RpcClient, RpcClientOptions } from '@costgov/rpc';
import { startServiceUnderTest, uploadParts } from '@costgov/testing';

export interface CostsHoldingOptions {
  /** The connection's provider; aws unless said. */
  provider?: string;
  /** Options of the scanData client, such as a longer deadline for a file of many resources. */
  scanData?: RpcClientOptions;
}

/** A connection of the team, created through `connections`, holding `file` uploaded through `costData`. */
export async function createHolding(
  clients: {
    connections: RpcClient<typeof costs.ConnectionsService>;
    costData: RpcClient<typeof costs.CostDataService>;
  },
  team: CallContext,
  name: string,
  file: Uint8Array | string,
  provider = 'aws',
): Promise<string> {
  const { id } = await clients.connections.createConnection({ name, provider }, team);
  await clients.costData.uploadCostData(uploadParts(id, file), team);
  return id;
}

/**
 * The costs service on a fresh database and bus, with clients connections, costData and scanData, and
 * one connection of `team` named `name` holding `file` (a FOCUS export). `stop()` closes it all.
 */
export async function startCostsHolding(
  team: CallContext,
  name: string,
  file: Uint8Array | string,
  options: CostsHoldingOptions = {},
) {
  const running = await startServiceUnderTest(costsModule(), {
    clients: { connections: costs.ConnectionsService, costData: costs.CostDataService },
  });
  try {
    const clients = { ...running.clients, scanData: running.client(costs.ScanDataService, options.scanData) };
    const connectionId = await createHolding(clients, team, name, file, options.provider);
    return { ...running, clients, connectionId };
  } catch (error) {
    await running.stop();
    throw error;
  }
}

export type CostsHolding = Awaited<ReturnType<typeof startCostsHolding>>;

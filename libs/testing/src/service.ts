import type { DescService } from '@bufbuild/protobuf';
import type { Bus } from '@costgov/bus';
import type { Db } from '@costgov/db';
import type { Logger } from '@costgov/log';
import { createRpcClient, type RpcClient, type RpcClientOptions } from '@costgov/rpc';
import { startService, type RunningService, type ServiceModule } from '@costgov/runtime';
import { freshDb, testBus } from './fresh';
import { testLogger } from './loggers';

export interface ServiceUnderTestOptions<Clients extends Record<string, DescService>> {
  /** gRPC clients of the service, by the name the test calls them (`{ projects: budgets.ProjectsService }`). */
  clients?: Clients;
  /** What the service's configuration is parsed from: only this, nothing of the test process's environment. */
  env?: NodeJS.ProcessEnv;
  now?: () => Date;
  logger?: Logger;
  /** A bus the caller owns and closes (replicas share one); by default a fresh testBus, closed on stop. */
  bus?: Bus;
  /** A database to start on (a restart, a replica); by default a fresh one. The service closes it on stop. */
  db?: Db;
}

export interface ServiceUnderTest<Clients extends Record<string, DescService>> {
  service: RunningService;
  db: Db;
  bus: Bus;
  /** host:port of its gRPC server. */
  address: string;
  clients: { [K in keyof Clients]: RpcClient<Clients[K]> };
  /** One more client (another service, a longer deadline), closed on stop. */
  client<S extends DescService>(service: S, options?: RpcClientOptions): RpcClient<S>;
  /** Closes the clients, stops the service (which closes its database) and the bus it made. */
  stop(): Promise<void>;
}

/**
 * One service module started as its composition root starts it (migrations, gRPC on a free loopback
 * port, consumers, outbox relay) on a fresh database and bus, with gRPC clients of it.
 */
export async function startServiceUnderTest<
  C extends object,
  Clients extends Record<string, DescService> = Record<never, DescService>,
>(
  module: ServiceModule<C>,
  options: ServiceUnderTestOptions<Clients> = {},
): Promise<ServiceUnderTest<Clients>> {
  const logger = options.logger ?? testLogger();
  const ownBus = options.bus ? undefined : await testBus(logger);
  const bus = options.bus ?? ownBus!;
  const db = options.db ?? (await freshDb(module.name));
  const service = await startService(module, {
    logger,
    bus,
    openDb: async () => db,
    dataDir: 'memory',
    grpcAddress: '127.0.0.1:0',
    env: options.env ?? {},
    ...(options.now ? { now: options.now } : {}),
  }).catch(async (error: unknown) => {
    await db.close();
    await ownBus?.close();
    throw error;
  });
  const address = `127.0.0.1:${service.port}`;
  const made: Array<{ close(): void }> = [];
  const client = <S extends DescService>(descriptor: S, clientOptions?: RpcClientOptions) => {
    const rpc = createRpcClient(descriptor, address, clientOptions);
    made.push(rpc);
    return rpc;
  };
  const clients = Object.fromEntries(
    Object.entries(options.clients ?? {}).map(([name, descriptor]) => [name, client(descriptor)]),
  ) as unknown as ServiceUnderTest<Clients>['clients'];
  return {
    service,
    db,
    bus,
    address,
    clients,
    client,
    async stop() {
      for (const rpc of made) rpc.close();
      await service.stop();
      await ownBus?.close();
    },
  };
}

import {
  consumeWithInbox,
  createOutbox,
  outboxBacklog,
  outboxMigration,
  startOutboxRelay,
  type Bus,
  type CloudEvent,
} from '@costgov/bus';
import { allOf, baseConfig, loadConfig, z } from '@costgov/config';
import { migrate, openDb, type Db, type Migration, type Queryable } from '@costgov/db';
import { newId, type IdGenerator } from '@costgov/ids';
import { serviceLogger, type Logger } from '@costgov/log';
import { createRpcServer, type RpcServer } from '@costgov/rpc';
import { observeRpcCall, watchOutbox } from '@costgov/telemetry';
import {
  idempotencyMigration,
  idempotentCalls,
  purgeIdempotencyKeys,
  type IdempotentCalls,
} from './idempotency';

export type Outbox = ReturnType<typeof createOutbox>;

export interface EventHandlerOptions {
  /** Durable consumer name, unique per consuming service and purpose. */
  durable: string;
  types: string[];
  handler: (tx: Queryable, event: CloudEvent) => Promise<void>;
}

/**
 * The variables every service reads, whichever root starts it: the shared ones, and those of the outbox
 * relay, the database connection and the Idempotency-Key records that startService sets up.
 */
export const serviceConfig = baseConfig.extend({
  /**
   * The relay publishes at each commit (LISTEN/NOTIFY); its poll only bounds the delay when a
   * notification is lost, e.g. while the listening connection is being re-established.
   */
  OUTBOX_POLL_MS: z.coerce.number().int().min(10).default(1_000),
  /** `off` behind a pooler in transaction mode that does not keep prepared statements (libs/db). */
  DATABASE_PREPARED_STATEMENTS: z.enum(['on', 'off']).default('on'),
  /** How long an Idempotency-Key's answer is kept by the service that owns it (as at the gateway). */
  IDEMPOTENCY_TTL_MS: z.coerce
    .number()
    .int()
    .min(60_000)
    .default(24 * 60 * 60 * 1000),
});

export type ServiceConfig = z.infer<typeof serviceConfig>;

/** What a service module gets from the composition root: every outside dependency, nothing global. */
export interface ServiceContext<C extends object = object> {
  name: string;
  logger: Logger;
  db: Db;
  bus: Bus;
  rpc: RpcServer;
  outbox: Outbox;
  newId: IdGenerator;
  now: () => Date;
  /** The shared variables and the module's own, parsed once from the environment at start and frozen. */
  config: Readonly<ServiceConfig & C>;
  /** Folder for the service's files on the embedded default (`memory` in tests: keep nothing on disk). */
  dataDir: string;
  /** Starts an idempotent consumer (inbox in this service's database) that stops with the service. */
  consume(options: EventHandlerOptions): Promise<void>;
  /** Runs an RPC's effect once per Idempotency-Key, recorded in this service's database (idempotency.ts). */
  once: IdempotentCalls;
}

export interface ServiceModule<C extends object = object> {
  name: string;
  migrations: Migration[];
  /** The variables the service reads beyond serviceConfig's (its `config.ts`); startService parses both. */
  config: z.ZodType<C>;
  /** Registers the gRPC services and consumers; may return a hook that runs at shutdown. */
  start(ctx: ServiceContext<C>): Promise<void | (() => Promise<void>)>;
}

export interface StartOptions {
  logger: Logger;
  bus: Bus;
  databaseUrl?: string;
  dataDir: string;
  /** `host:port` for the gRPC server; port 0 picks a free one. */
  grpcAddress: string;
  /** The environment the service's configuration is parsed from; process.env by default. */
  env?: NodeJS.ProcessEnv;
  now?: () => Date;
  /** Opens the service's database; tests pass one that makes a fresh schema. */
  openDb?: (service: string) => Promise<Db>;
}

export interface RunningService {
  name: string;
  /** Bound gRPC port. */
  port: number;
  db: Db;
  /** Reports NOT_SERVING on the gRPC health service (readiness fails) while calls are still answered. */
  drain(): void;
  stop(): Promise<void>;
}

/** How often each replica deletes expired Idempotency-Keys (every replica may: a delete is idempotent). */
const idempotencyPurgeMs = 10 * 60 * 1000;

/** Every migration of a service's schema: the shared outbox and idempotency tables, then the service's own. */
export const serviceMigrations = (module: Pick<ServiceModule, 'migrations'>): Migration[] => [
  outboxMigration,
  idempotencyMigration,
  ...module.migrations,
];

/** Every variable of a service: serviceConfig's and the module's own. */
export const serviceConfigOf = <C extends object>(module: Pick<ServiceModule<C>, 'config'>) =>
  allOf(serviceConfig, module.config);

/**
 * Parses the service's configuration (a bad value throws a ConfigError naming it, before anything is
 * opened), then opens its database, migrates it, starts its gRPC server, consumers and outbox relay.
 */
export async function startService<C extends object>(
  module: ServiceModule<C>,
  options: StartOptions,
): Promise<RunningService> {
  const config = loadConfig(serviceConfigOf(module), options.env ?? process.env);
  const { OUTBOX_POLL_MS, DATABASE_PREPARED_STATEMENTS, IDEMPOTENCY_TTL_MS } = config;
  const logger = serviceLogger(options.logger, module.name);
  const db = options.openDb
    ? await options.openDb(module.name)
    : await openDb({
        service: module.name,
        databaseUrl: options.databaseUrl,
        dataDir: options.dataDir,
        logger,
        preparedStatements: DATABASE_PREPARED_STATEMENTS === 'on',
      });
  const applied = await migrate(db, serviceMigrations(module));
  if (applied.length > 0) logger.info({ migrations: applied }, 'applied migrations');

  const rpc = createRpcServer({
    logger,
    onCall: ({ seconds, ...call }) => observeRpcCall(call, seconds),
  });
  const consumers: Array<{ stop(): Promise<void> }> = [];
  const now = options.now ?? (() => new Date());
  const ctx: ServiceContext<C> = {
    name: module.name,
    logger,
    db,
    bus: options.bus,
    rpc,
    outbox: createOutbox({ source: module.name }),
    newId,
    now,
    config,
    dataDir: options.dataDir,
    async consume({ durable, types, handler }) {
      consumers.push(await consumeWithInbox({ db, bus: options.bus, durable, types, handler, logger }));
    },
    once: idempotentCalls({ db, now, ttlMs: IDEMPOTENCY_TTL_MS }),
  };
  const onStop = await module.start(ctx);
  const port = await rpc.listen(options.grpcAddress);
  const relay = startOutboxRelay({ db, bus: options.bus, logger, pollMs: OUTBOX_POLL_MS });
  const unwatchOutbox = watchOutbox(module.name, () => outboxBacklog(db));
  const purge = setInterval(() => {
    purgeIdempotencyKeys(db, now(), IDEMPOTENCY_TTL_MS).catch((err: unknown) =>
      logger.warn({ err }, 'expired idempotency keys not purged; trying again later'),
    );
  }, idempotencyPurgeMs).unref();
  logger.info({ port }, 'service started');

  return {
    name: module.name,
    port,
    db,
    drain: () => rpc.setServing('', false),
    async stop() {
      clearInterval(purge);
      await rpc.shutdown();
      for (const consumer of consumers) await consumer.stop();
      await relay.stop();
      unwatchOutbox();
      if (onStop) await onStop();
      await db.close();
      logger.info('service stopped');
    },
  };
}

import { Cluster, Redis, type RedisOptions } from 'ioredis';
import type { Logger } from '@costgov/log';

export interface RedisClientOptions {
  /** `redis://[user:password@]host:port[/db]` or `rediss://` (TLS); with `cluster`, one node of the cluster. */
  url: string;
  /**
   * The URL is a seed of a Redis Cluster (REDIS_CLUSTER=on): ioredis' cluster client learns every master
   * from it (CLUSTER SLOTS), sends each command to the master of its key's slot and follows MOVED/ASK.
   */
  cluster?: boolean;
  /** Milliseconds a command may take before it fails; the client never queues or retries one. */
  timeoutMs: number;
  logger: Pick<Logger, 'debug'>;
  /** Who uses the client, for its log lines: 'rate limiter', 'idempotency'. */
  purpose: string;
}

/** One server or a cluster: both run commands, scripts (defineCommand) and `call` alike. */
export type RedisClient = Redis | Cluster;

/** Reconnects in the background, backing off to one attempt a second, for as long as the process runs. */
const reconnectDelayMs = (attempt: number) => Math.min(50 * 2 ** attempt, 1_000);

/**
 * The one way costgov opens Redis (the rate limiter and the idempotency store): a client that fails fast
 * rather than waits. No offline queue and no retries, so while Redis (or, on a cluster, the master of a
 * key's slot) is down every command fails within `timeoutMs`, and the caller's fallback answers; the
 * connection comes back by itself when Redis does, without a restart.
 */
export function createRedisClient({
  url,
  cluster = false,
  timeoutMs,
  logger,
  purpose,
}: RedisClientOptions): RedisClient {
  const common = {
    maxRetriesPerRequest: 0,
    commandTimeout: timeoutMs,
    connectTimeout: 500,
  } satisfies RedisOptions;
  const client: RedisClient = cluster
    ? new Cluster([seedOf(url)], {
        enableOfflineQueue: false,
        clusterRetryStrategy: reconnectDelayMs,
        // A command that meets a failover or CLUSTERDOWN is retried after these delays, within its timeout.
        retryDelayOnFailover: 50,
        retryDelayOnClusterDown: 50,
        retryDelayOnTryAgain: 50,
        slotsRefreshTimeout: 1_000,
        slotsRefreshInterval: 2_000,
        redisOptions: { ...common, ...credentialsOf(url) },
      })
    : new Redis(url, { ...common, enableOfflineQueue: false, retryStrategy: reconnectDelayMs });
  // Every failed reconnect emits an error; the callers' fallbacks log the outage once, so these stay at debug.
  client.on('error', (err: Error) => logger.debug({ err }, `${purpose} redis connection error`));
  client.on('ready', () => logger.debug(`${purpose} redis connection ready`));
  return client;
}

/** Resolves once the client is connected (on a cluster: knows its slots); rejects after `timeoutMs`. */
export function redisReady(client: RedisClient, timeoutMs: number, what: string): Promise<void> {
  if (client.status === 'ready') return Promise.resolve();
  return new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => {
      client.off('ready', onReady);
      reject(new Error(`${what} not ready within ${timeoutMs} ms`));
    }, timeoutMs);
    const onReady = () => {
      clearTimeout(timer);
      resolve();
    };
    client.once('ready', onReady);
  });
}

/** QUIT when connected, otherwise drops the connection (and stops reconnecting). */
export async function closeRedisClient(client: RedisClient): Promise<void> {
  if (client.status === 'ready') await client.quit().catch(() => client.disconnect());
  else client.disconnect();
}

/** The URL without its password, for messages. */
export function redactedRedisUrl(url: string): string {
  try {
    const parsed = new URL(url);
    if (parsed.password) parsed.password = '***';
    return parsed.toString();
  } catch {
    return 'the configured URL';
  }
}

function seedOf(url: string): { host: string; port: number } {
  const parsed = new URL(url);
  return { host: parsed.hostname, port: parsed.port ? Number(parsed.port) : 6379 };
}

/** What every node connection of a cluster takes from the URL: user, password and TLS (no database: a cluster has only 0). */
function credentialsOf(url: string): Pick<RedisOptions, 'username' | 'password' | 'tls'> {
  const parsed = new URL(url);
  const options: Pick<RedisOptions, 'username' | 'password' | 'tls'> = {};
  if (parsed.username) options.username = decodeURIComponent(parsed.username);
  if (parsed.password) options.password = decodeURIComponent(parsed.password);
  if (parsed.protocol === 'rediss:') options.tls = {};
  return options;
}

import { randomUUID } from 'node:crypto';
import {
  closeRedisClient,
  createRedisClient,
  redactedRedisUrl,
  redisReady,
  type RedisClient,
} from '@costgov/redis';
import {
  claimOf,
  defaultLockTtlMs,
  defaultTtlMs,
  type IdempotencyLogger,
  type IdempotencyRecord,
  type IdempotencyStore,
  type IdempotencyStoreOptions,
} from './store';

export interface RedisIdempotencyStoreOptions extends IdempotencyStoreOptions {
  url: string;
  /** The URL is a seed of a Redis Cluster (REDIS_CLUSTER=on); every command and script takes one key. */
  cluster?: boolean;
  logger: IdempotencyLogger;
  /** Milliseconds a Redis command may take before the claim fails (and a fallback answers). */
  timeoutMs?: number;
  keyPrefix?: string;
}

export interface RedisIdempotencyStore extends IdempotencyStore {
  /** Resolves once the client is connected; until then every claim fails at once. */
  ready(timeoutMs?: number): Promise<void>;
}

type StoreClient = RedisClient & {
  costgovIdempotencyComplete(key: string, lock: string, record: string, ttlMs: number): Promise<number>;
  costgovIdempotencyRelease(key: string, lock: string): Promise<number>;
};

// Both act only while the key still holds this request's lock (the value is unique to it): a lock that
// expired and was claimed by a retry is not overwritten or freed by the request that lost it.
const completeScript = `
if redis.call('GET', KEYS[1]) == ARGV[1] then
  redis.call('SET', KEYS[1], ARGV[2], 'PX', ARGV[3])
  return 1
end
return 0`;
const releaseScript = `
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('DEL', KEYS[1])
end
return 0`;

/**
 * Idempotency records shared by every gateway replica. A claim is one atomic `SET key lock NX PX ttl GET`
 * (Redis 7): it locks a free key, or returns what holds it, in one round trip and without a race. Every
 * command and script takes one key, so it runs on a Redis Cluster as on one server. The client never queues: while Redis is down each command fails within `timeoutMs`.
 */
export function createRedisIdempotencyStore({
  url,
  cluster = false,
  logger,
  ttlMs = defaultTtlMs,
  lockTtlMs = defaultLockTtlMs,
  timeoutMs = 500,
  keyPrefix = 'costgov:idem:',
}: RedisIdempotencyStoreOptions): RedisIdempotencyStore {
  const client = createRedisClient({
    url,
    cluster,
    timeoutMs,
    logger,
    purpose: 'idempotency',
  }) as StoreClient;
  client.defineCommand('costgovIdempotencyComplete', { numberOfKeys: 1, lua: completeScript });
  client.defineCommand('costgovIdempotencyRelease', { numberOfKeys: 1, lua: releaseScript });

  return {
    async claim(key, fingerprint) {
      const storageKey = keyPrefix + key;
      const lock = JSON.stringify({
        state: 'running',
        fingerprint,
        owner: randomUUID(),
      } satisfies IdempotencyRecord);
      const previous = (await client.call('SET', storageKey, lock, 'NX', 'PX', String(lockTtlMs), 'GET')) as
        string | null;
      if (previous !== null) return claimOf(JSON.parse(previous) as IdempotencyRecord);
      return {
        state: 'claimed',
        lock: {
          async complete(response) {
            const record = JSON.stringify({
              state: 'completed',
              fingerprint,
              response,
            } satisfies IdempotencyRecord);
            try {
              await client.costgovIdempotencyComplete(storageKey, lock, record, ttlMs);
            } catch (err) {
              // The lock then expires: retries meanwhile get 409, and after it the request runs again.
              logger.warn(
                { err },
                'idempotency: response not stored in Redis; the key is freed when its lock expires',
              );
            }
          },
          async release() {
            try {
              await client.costgovIdempotencyRelease(storageKey, lock);
            } catch (err) {
              logger.debug({ err }, 'idempotency: key not released in Redis; its lock expires on its own');
            }
          },
        },
      };
    },

    ready(waitMs = 5_000) {
      return redisReady(client, waitMs, `idempotency: Redis at ${redactedRedisUrl(url)}`);
    },

    close: () => closeRedisClient(client),
  };
}

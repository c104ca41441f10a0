// The one Redis client factory of costgov (ioredis, one server or a Redis Cluster): see client.ts.
export {
  closeRedisClient,
  createRedisClient,
  redactedRedisUrl,
  redisReady,
  type RedisClient,
  type RedisClientOptions,
} from './client';

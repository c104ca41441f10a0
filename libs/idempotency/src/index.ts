export type {
  Claim,
  IdempotencyLock,
  IdempotencyLogger,
  IdempotencyStore,
  IdempotencyStoreOptions,
  StoredResponse,
} from './store';
export { createMemoryIdempotencyStore, type MemoryIdempotencyStoreOptions } from './memory';
export {
  createRedisIdempotencyStore,
  type RedisIdempotencyStore,
  type RedisIdempotencyStoreOptions,
} from './redis';
export { createFallbackIdempotencyStore, type FallbackIdempotencyStoreOptions } from './fallback';

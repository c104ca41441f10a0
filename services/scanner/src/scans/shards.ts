import type { ShardSpec } from './run-rules';

/** How a scan is split: one shard per `perShard` resources, at least one, at most `maxShards`. */
export function shardCount(resources: number, limits: { perShard: number; maxShards: number }): number {
  const wanted = Math.ceil(Math.max(0, resources) / Math.max(1, limits.perShard));
  return Math.min(Math.max(1, wanted), Math.max(1, limits.maxShards));
}

/**
 * The shards between `bounds` (ascending resource ids, byte order, as costs' GetScanData shard_bounds
 * answers them): shard i runs from bound i - 1 (inclusive) to bound i (exclusive), the first from the
 * start and the last to the end. A repeated bound makes an empty shard. No bounds: one shard.
 */
export function rangeShards(bounds: readonly string[]): ShardSpec[] {
  const count = bounds.length + 1;
  return Array.from({ length: count }, (_, index) => ({
    index,
    count,
    ...(index > 0 ? { from: bounds[index - 1]! } : {}),
    ...(index < bounds.length ? { to: bounds[index]! } : {}),
  }));
}

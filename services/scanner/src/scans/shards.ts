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

/** Most shards costs splits a window into in one answer (GetScanData split_into). */
const maxFineShards = 4096;

/**
 * How finely a plan has costs split the window with the aggregates, before it knows the resource count:
 * eight times the most shards a scan may have (at most costs' 4096), so that `coarseBounds` can take
 * any count of shards up to that most from it; 0 (no split) when a scan is never split.
 */
export function fineShards(mostShards: number): number {
  return mostShards > 1 ? Math.min(maxFineShards, mostShards * 8) : 0;
}

/**
 * `count` shards from the bounds of a finer split (`fine.length + 1` shards of about equal size, as costs
 * answers them): coarse bound j is the fine bound nearest to j / count of the way (within half a fine shard
 * of it), so each shard is within one fine shard of an equal share, and exactly COUNT's split when count
 * divides the fine split. Fewer fine bounds than shards asked: the fine split itself.
 */
export function coarseBounds(fine: readonly string[], count: number): string[] {
  const fineCount = fine.length + 1;
  if (count >= fineCount) return [...fine];
  return Array.from({ length: count - 1 }, (_, index) => {
    const at = Math.round(((index + 1) * fineCount) / count);
    return fine[Math.min(Math.max(at, 1), fine.length) - 1]!;
  });
}

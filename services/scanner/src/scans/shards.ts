/** How a scan is split: one shard per `perShard` resources, at least one, at most `maxShards`. */
export function shardCount(resources: number, limits: { perShard: number; maxShards: number }): number {
  const wanted = Math.ceil(Math.max(0, resources) / Math.max(1, limits.perShard));
  return Math.min(Math.max(1, wanted), Math.max(1, limits.maxShards));
}

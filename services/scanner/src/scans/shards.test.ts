import { describe, expect, it } from 'vitest';
import { shardCount } from './shards';

describe('shardCount: one shard per SCAN_SHARD_RESOURCES resources, within 1..SCAN_MAX_SHARDS', () => {
  it.for([
    // [resources, perShard, maxShards, shards]
    [0, 10_000, 64, 1],
    [1, 10_000, 64, 1],
    [10_000, 10_000, 64, 1],
    [10_001, 10_000, 64, 2],
    [30_000, 10_000, 64, 3],
    [1_000_000, 10_000, 64, 64],
    [45, 10, 64, 5],
    [45, 10, 3, 3],
    [45, 10, 1, 1],
  ] as const)(
    '%i resources, %i per shard, at most %i: %i shards',
    ([resources, perShard, maxShards, shards]) => {
      expect(shardCount(resources, { perShard, maxShards })).toBe(shards);
    },
  );
});

import { describe, expect, it } from 'vitest';
import { coarseBounds, fineShards, shardCount } from './shards';

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

describe('fineShards and coarseBounds: a plan splits finely once, then takes the shards it needs', () => {
  it('asks for eight times the most shards, within costs 4096, and no split when scans are never split', () => {
    expect([fineShards(64), fineShards(1024), fineShards(2), fineShards(1)]).toEqual([512, 4096, 16, 0]);
  });

  it('takes every bound when as many shards are asked as the split has, or more', () => {
    const fine = ['b', 'c', 'd'];
    expect(coarseBounds(fine, 4)).toEqual(fine);
    expect(coarseBounds(fine, 9)).toEqual(fine);
  });

  it.for([2, 3, 5, 7, 64])('cuts %i shards each within a fine shard of an equal share', (count) => {
    // 100,000 ids numbered 1..n, split into 512 as costs does: fine shard i starts at 1 + floor(i n / 512).
    const n = 100_000;
    const fineCount = 512;
    const start = (i: number) => 1 + Math.floor((i * n) / fineCount);
    const fine = Array.from({ length: fineCount - 1 }, (_, i) => String(start(i + 1)).padStart(6, '0'));
    const bounds = coarseBounds(fine, count).map(Number);
    expect(bounds).toHaveLength(count - 1);
    const starts = [1, ...bounds, n + 1];
    expect([...starts].sort((a, b) => a - b)).toEqual(starts);
    for (let j = 0; j < count; j++)
      expect(Math.abs(starts[j + 1]! - starts[j]! - n / count)).toBeLessThanOrEqual(n / fineCount + 1);
  });
});

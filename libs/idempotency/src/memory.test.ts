import { describe, expect, it } from 'vitest';
import { describeIdempotencyStoreContract } from '../test/contract';
import { createMemoryIdempotencyStore } from './memory';

let clockMs = 0;

describe('memory idempotency store', () => {
  describeIdempotencyStoreContract({
    open: async (options) => createMemoryIdempotencyStore({ ...options, now: () => clockMs }),
    wait: async (ms) => {
      clockMs += ms;
    },
    ttlMs: 24 * 60 * 60 * 1000,
    lockTtlMs: 60_000,
  });

  it('stays within maxEntries, dropping the oldest record', async () => {
    const store = createMemoryIdempotencyStore({ maxEntries: 3, now: () => clockMs });
    for (const key of ['a', 'b', 'c', 'd']) await store.claim(key, 'fp');
    expect(store.size()).toBe(3);
    expect((await store.claim('a', 'fp')).state).toBe('claimed'); // dropped, so free again
    expect((await store.claim('d', 'fp')).state).toBe('running');
  });
});

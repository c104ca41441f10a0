import { describe, expect, it } from 'vitest';
import { describeLimiterContract } from '../test/limiter-contract';
import { createMemoryLimiter } from './memory';

describe('memory limiter', () => {
  let clock = 1_700_000_000_000;
  describeLimiterContract({
    open: async ({ leaseTtlMs }) => createMemoryLimiter({ leaseTtlMs, now: () => clock }),
    now: async () => clock,
    wait: async (ms) => {
      clock += ms;
    },
    exactClock: true,
    refillWaitsMs: [0, 499, 500, 1_600, 30_000, 59_999, 60_000, 600_000],
  });

  describe('policy validation', () => {
    it.each([
      [{ capacity: 0 }, 'capacity is 0, expected an integer >= 1'],
      [{ refillPerSecond: 0 }, 'refillPerSecond is 0, expected a number > 0'],
      [{ concurrency: 1.5 }, 'concurrency is 1.5, expected an integer >= 1'],
      [{ name: '' }, 'name is , expected a non-empty string'],
    ])('rejects %o', async (override, message) => {
      const policy = { name: 'default', capacity: 120, refillPerSecond: 2, concurrency: 10, ...override };
      await expect(createMemoryLimiter().acquire('key', policy)).rejects.toThrow(message);
    });
  });
});

import { describe, expect, it } from 'vitest';
import { uniqueName } from '@costgov/testing';
import type { Acquisition, LimitPolicy, RateLimiter } from '../src/limiter';

/** The behaviour every RateLimiter shares, run against each implementation by its own test file. */

export interface LimiterHarness {
  /** A limiter as one gateway replica sees it. */
  open(options: { leaseTtlMs: number }): Promise<RateLimiter>;
  /** The limiter's clock in milliseconds. */
  now(): Promise<number>;
  /** Lets `ms` pass on the limiter's clock. */
  wait(ms: number): Promise<void>;
  /** True when time moves only through wait(), so results are exact rather than within bounds. */
  exactClock: boolean;
  /** Waits after which to measure the refill; each costs real time on a real clock. */
  refillWaitsMs: number[];
}

const standard: LimitPolicy = { name: 'default', capacity: 120, refillPerSecond: 2, concurrency: 10 };

async function acquireAndRelease(
  limiter: RateLimiter,
  key: string,
  policy: LimitPolicy,
): Promise<Acquisition> {
  const acquisition = await limiter.acquire(key, policy);
  await acquisition.lease?.release();
  return acquisition;
}

export function describeLimiterContract(harness: LimiterHarness): void {
  const withLimiter = async (leaseTtlMs: number, test: (limiter: RateLimiter) => Promise<void>) => {
    const limiter = await harness.open({ leaseTtlMs });
    try {
      await test(limiter);
    } finally {
      await limiter.close();
    }
  };

  describe('a burst of capacity passes and the next request is refused for rate', () => {
    it.each([
      { policy: standard, retryAfterSeconds: 1, resetSeconds: 60 },
      {
        policy: { ...standard, name: 'small', capacity: 20, refillPerSecond: 5 },
        retryAfterSeconds: 1,
        resetSeconds: 4,
      },
      {
        policy: { ...standard, name: 'slow', capacity: 5, refillPerSecond: 0.4 },
        retryAfterSeconds: 3,
        resetSeconds: 13,
      },
      {
        policy: { ...standard, name: 'slower', capacity: 3, refillPerSecond: 0.25 },
        retryAfterSeconds: 4,
        resetSeconds: 12,
      },
    ])(
      '$policy.capacity at $policy.refillPerSecond/s: Retry-After $retryAfterSeconds s',
      ({ policy, ...expected }) =>
        withLimiter(60_000, async (limiter) => {
          const key = uniqueName('burst');
          for (let i = 0; i < policy.capacity; i++) {
            const { decision, lease } = await acquireAndRelease(limiter, key, policy);
            expect({
              allowed: decision.allowed,
              remaining: decision.remaining,
              lease: Boolean(lease),
            }).toEqual({
              allowed: true,
              remaining: policy.capacity - 1 - i,
              lease: true,
            });
          }
          const refused = await limiter.acquire(key, policy);
          expect(refused).toEqual({
            decision: { allowed: false, reason: 'rate', remaining: 0, policy, ...expected },
          });
        }),
    );

    it('keeps buckets of different keys and different policies apart', () =>
      withLimiter(60_000, async (limiter) => {
        const policy = { ...standard, capacity: 2 };
        const key = uniqueName('apart');
        await acquireAndRelease(limiter, key, policy);
        await acquireAndRelease(limiter, key, policy);
        expect((await limiter.acquire(key, policy)).decision.reason).toBe('rate');
        expect((await acquireAndRelease(limiter, uniqueName('other'), policy)).decision.allowed).toBe(true);
        expect((await acquireAndRelease(limiter, key, { ...policy, name: 'scim' })).decision.allowed).toBe(
          true,
        );
      }));
  });

  describe('the bucket refills by floor(elapsed * rate) up to capacity', () => {
    it.each(harness.refillWaitsMs)('after %i ms', (waitMs) =>
      withLimiter(60_000, async (limiter) => {
        const key = uniqueName('refill');
        for (let i = 0; i < standard.capacity - 1; i++) await acquireAndRelease(limiter, key, standard);
        // The last token taken, bracketed by the limiter's clock: the bucket then holds less than one.
        const drainStart = await harness.now();
        const last = await acquireAndRelease(limiter, key, standard);
        const drainEnd = await harness.now();
        expect(last.decision).toMatchObject({ allowed: true, remaining: 0 });

        await harness.wait(waitMs);

        const probeStart = await harness.now();
        const probe = await acquireAndRelease(limiter, key, standard);
        const probeEnd = await harness.now();
        const whole = probe.decision.allowed ? probe.decision.remaining + 1 : probe.decision.remaining;
        const tokensOver = (ms: number) =>
          Math.min(standard.capacity, Math.floor((ms * standard.refillPerSecond) / 1000));
        const least = tokensOver(probeStart - drainEnd);
        const most = harness.exactClock
          ? least
          : Math.min(standard.capacity, tokensOver(probeEnd - drainStart) + 1);
        expect(whole).toBeGreaterThanOrEqual(least);
        expect(whole).toBeLessThanOrEqual(most);
        expect(probe.decision.reason).toBe(whole === 0 ? 'rate' : undefined);
      }),
    );
  });

  describe('at most `concurrency` leases are held at once', () => {
    it('refuses the next request for concurrency without taking a token, and a release frees a slot', () =>
      withLimiter(60_000, async (limiter) => {
        const key = uniqueName('slots');
        const held = [];
        for (let i = 0; i < standard.concurrency; i++) held.push(await limiter.acquire(key, standard));
        expect(held.every((a) => a.decision.allowed && a.lease)).toBe(true);

        for (let i = 0; i < 5; i++) {
          expect(await limiter.acquire(key, standard)).toEqual({
            decision: {
              allowed: false,
              reason: 'concurrency',
              remaining: standard.capacity - standard.concurrency,
              resetSeconds: 5,
              retryAfterSeconds: 1,
              policy: standard,
            },
          });
        }

        await held[0]?.lease?.release();
        const next = await limiter.acquire(key, standard);
        // 109, not 104: the five refusals gave their tokens back.
        expect(next.decision).toMatchObject({
          allowed: true,
          remaining: standard.capacity - standard.concurrency - 1,
        });
        expect((await limiter.acquire(key, standard)).decision.reason).toBe('concurrency');
      }));

    it('frees one slot per lease however often it is released', () =>
      withLimiter(60_000, async (limiter) => {
        const policy = { ...standard, concurrency: 2 };
        const key = uniqueName('twice');
        const first = await limiter.acquire(key, policy);
        await limiter.acquire(key, policy);
        await first.lease?.release();
        await first.lease?.release();
        expect((await limiter.acquire(key, policy)).decision.allowed).toBe(true);
        expect((await limiter.acquire(key, policy)).decision.reason).toBe('concurrency');
      }));

    it('takes no slot for a request refused for rate', () =>
      withLimiter(60_000, async (limiter) => {
        const policy = { ...standard, capacity: 2, refillPerSecond: 10, concurrency: 1 };
        const key = uniqueName('rate-no-slot');
        await acquireAndRelease(limiter, key, policy);
        await acquireAndRelease(limiter, key, policy);
        for (let i = 0; i < 3; i++) expect((await limiter.acquire(key, policy)).decision.reason).toBe('rate');
        await harness.wait(150);
        expect((await limiter.acquire(key, policy)).decision.allowed).toBe(true);
      }));

    it('answers rate, not concurrency, when the bucket is empty and every slot is taken', () =>
      withLimiter(60_000, async (limiter) => {
        const policy = { ...standard, capacity: 2, refillPerSecond: 0.01, concurrency: 2 };
        const key = uniqueName('both');
        await limiter.acquire(key, policy);
        await limiter.acquire(key, policy);
        expect((await limiter.acquire(key, policy)).decision).toMatchObject({
          reason: 'rate',
          retryAfterSeconds: 100,
        });
      }));
  });

  describe('a renewed lease (a request outliving one TTL) keeps its slot', () => {
    // Renewed every half TTL: a whole second leaves a loaded machine room for a late timer between renewals.
    const leaseTtlMs = 1_000;

    it('holds the slot past the first expiry while renewed, and frees it one TTL after the last renewal', () =>
      withLimiter(leaseTtlMs, async (limiter) => {
        const policy = { ...standard, concurrency: 1 };
        const key = uniqueName('renew');
        const { lease } = await limiter.acquire(key, policy);
        let renewedFrom = 0;
        for (let i = 0; i < 3; i++) {
          await harness.wait(leaseTtlMs / 2);
          // Read before the renewal, so that it bounds the renewal's own time from below.
          renewedFrom = await harness.now();
          await lease!.renew();
        }
        const renewedAt = await harness.now();
        // 1.5 TTL after the acquire the slot is still taken.
        expect((await limiter.acquire(key, policy)).decision.reason).toBe('concurrency');
        for (;;) {
          const { decision, lease: next } = await limiter.acquire(key, policy);
          const at = await harness.now();
          if (decision.allowed) {
            expect(at - renewedFrom).toBeGreaterThanOrEqual(leaseTtlMs - 5);
            await next!.release();
            break;
          }
          expect(at - renewedAt, 'the renewed slot never expired').toBeLessThan(leaseTtlMs + 3_000);
          await harness.wait(25);
        }
        await lease!.renew(); // an expired lease stays expired
        const again = await limiter.acquire(key, policy);
        expect(again.decision.allowed).toBe(true);
        await again.lease!.release();
      }));

    it('does nothing once released', () =>
      withLimiter(leaseTtlMs, async (limiter) => {
        const policy = { ...standard, concurrency: 1 };
        const key = uniqueName('renew-released');
        const { lease } = await limiter.acquire(key, policy);
        await lease!.release();
        await lease!.renew();
        const next = await limiter.acquire(key, policy);
        expect(next.decision.allowed).toBe(true);
        await next.lease!.release();
      }));
  });

  describe('a lease never released (its gateway died) expires after leaseTtlMs', () => {
    // The first lease is freed half a TTL before the others: a whole second leaves room for late polls.
    const leaseTtlMs = 1_000;
    const pollMs = 25;

    it(`frees each slot ${leaseTtlMs} ms after it was taken, not before and not with the newest lease`, () =>
      withLimiter(leaseTtlMs, async (limiter) => {
        const policy = { ...standard, concurrency: 3 };
        const key = uniqueName('expiry');
        // One lease, then the others half a TTL later: the first must expire on its own.
        const firstFrom = await harness.now();
        await limiter.acquire(key, policy); // leases dropped, as by a gateway that died
        const firstUntil = await harness.now();
        await harness.wait(leaseTtlMs / 2);
        const othersFrom = await harness.now();
        for (let i = 1; i < policy.concurrency; i++) await limiter.acquire(key, policy);

        for (;;) {
          const before = await harness.now();
          const { decision } = await limiter.acquire(key, policy);
          const after = await harness.now();
          if (decision.allowed) {
            expect(after - firstFrom).toBeGreaterThanOrEqual(leaseTtlMs);
            expect(after - othersFrom, 'freed only when the newest lease expired').toBeLessThan(leaseTtlMs);
            if (harness.exactClock) expect(before - firstUntil).toBeLessThan(leaseTtlMs + pollMs);
            return;
          }
          expect(decision.reason).toBe('concurrency');
          expect(before - firstUntil, 'the slot is still taken long after its lease expired').toBeLessThan(
            leaseTtlMs + 3_000,
          );
          await harness.wait(pollMs);
        }
      }));
  });
}

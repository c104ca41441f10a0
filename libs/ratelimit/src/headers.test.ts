import { describe, expect, it } from 'vitest';
import { rateLimitHeaders } from './headers';
import { decide, type LimitPolicy } from './limiter';

const standard: LimitPolicy = { name: 'default', capacity: 120, refillPerSecond: 2, concurrency: 10 };
const scim: LimitPolicy = { name: 'scim', capacity: 600, refillPerSecond: 10, concurrency: 20 };

describe('RateLimit-Policy, RateLimit and Retry-After fields', () => {
  it.each([
    {
      case: 'allowed, 57.5 tokens left',
      decision: decide(standard, 'allowed', 57.5),
      headers: {
        'RateLimit-Policy': '"default";q=120;w=60, "concurrency";q=10;qu="concurrent-requests"',
        RateLimit: '"default";r=57;t=32',
      },
    },
    {
      case: 'allowed, bucket one short of full',
      decision: decide(standard, 'allowed', 119),
      headers: {
        'RateLimit-Policy': '"default";q=120;w=60, "concurrency";q=10;qu="concurrent-requests"',
        RateLimit: '"default";r=119;t=1',
      },
    },
    {
      case: 'refused for rate, empty bucket',
      decision: decide(standard, 'rate', 0.2),
      headers: {
        'RateLimit-Policy': '"default";q=120;w=60, "concurrency";q=10;qu="concurrent-requests"',
        RateLimit: '"default";r=0;t=60',
        'Retry-After': '1',
      },
    },
    {
      case: 'refused for concurrency, tokens left',
      decision: decide(standard, 'concurrency', 110),
      headers: {
        'RateLimit-Policy': '"default";q=120;w=60, "concurrency";q=10;qu="concurrent-requests"',
        RateLimit: '"default";r=110;t=5',
        'Retry-After': '1',
      },
    },
    {
      case: 'the SCIM policy, refused for rate',
      decision: decide(scim, 'rate', 0),
      headers: {
        'RateLimit-Policy': '"scim";q=600;w=60, "concurrency";q=20;qu="concurrent-requests"',
        RateLimit: '"scim";r=0;t=60',
        'Retry-After': '1',
      },
    },
    {
      case: 'a slow refill: window rounded up, Retry-After in whole seconds',
      decision: decide({ name: 'slow', capacity: 5, refillPerSecond: 0.4, concurrency: 1 }, 'rate', 0),
      headers: {
        'RateLimit-Policy': '"slow";q=5;w=13, "concurrency";q=1;qu="concurrent-requests"',
        RateLimit: '"slow";r=0;t=13',
        'Retry-After': '3',
      },
    },
    {
      case: 'a policy name needing escapes',
      decision: decide({ ...standard, name: 'team "a"\\b' }, 'allowed', 10),
      headers: {
        'RateLimit-Policy': '"team \\"a\\"\\\\b";q=120;w=60, "concurrency";q=10;qu="concurrent-requests"',
        RateLimit: '"team \\"a\\"\\\\b";r=10;t=55',
      },
    },
  ])('$case', ({ decision, headers }) => {
    expect(rateLimitHeaders(decision)).toEqual(headers);
  });
});

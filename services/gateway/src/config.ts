import { baseConfig, metricsHost, port, shutdownDrainMs, z } from '@costgov/config';

const trustProxy = z
  .string()
  .default('false')
  .transform((value): boolean | number | string => {
    const text = value.trim();
    if (text === '' || text === 'false') return false;
    if (text === 'true') return true;
    if (/^\d+$/.test(text)) return Number(text);
    return text;
  });

export const gatewayConfig = baseConfig
  .extend({
    PORT: port(8080),
    HOST: z.string().default('0.0.0.0'),
    METRICS_HOST: metricsHost,
    METRICS_PORT: port(9464),
    IDENTITY_ADDR: z.string().default('127.0.0.1:50051'),
    BUDGETS_ADDR: z.string().default('127.0.0.1:50052'),
    VIOLATIONS_ADDR: z.string().default('127.0.0.1:50053'),
    COSTS_ADDR: z.string().default('127.0.0.1:50054'),
    SCANNER_ADDR: z.string().default('127.0.0.1:50055'),
    NOTIFIER_ADDR: z.string().default('127.0.0.1:50057'),
    /** Public base URL of the API (https://api.example.com); SCIM locations are built from it when set. */
    PUBLIC_BASE_URL: z.string().url().optional(),
    /** Upper bound on how long an authentication answer is cached; identity may ask for less. */
    AUTH_CACHE_TTL_MS: z.coerce.number().int().min(0).default(30_000),
    /** `off` disables rate limiting (benchmarks); anything else leaves it on. */
    RATE_LIMIT: z.enum(['on', 'off']).default('on'),
    /**
     * Milliseconds a Redis limiter call may take before the per-process limiter answers instead. The timer
     * also measures the gateway's own event-loop lag: at 10 ms a loaded gateway read replies that had
     * arrived as timeouts and limited per process 75-96 % of the time (npm run bench), hence 100.
     */
    RATE_LIMIT_REDIS_TIMEOUT_MS: z.coerce.number().int().positive().default(100),
    /** Milliseconds a concurrency slot outlives a gateway that died holding it. */
    RATE_LIMIT_LEASE_TTL_MS: z.coerce.number().int().positive().default(60_000),
    /**
     * After SIGTERM, how long the gateway keeps serving while /readyz answers 503 `draining`, so load
     * balancers stop sending before it stops accepting. Unset: 5000 in production, 0 elsewhere.
     */
    SHUTDOWN_DRAIN_MS: shutdownDrainMs,
    /** How long a graceful stop then waits for requests in flight. */
    SHUTDOWN_GRACE_MS: z.coerce.number().int().min(0).default(10_000),
    /**
     * Whether to take the client address from X-Forwarded-For (express `trust proxy`): `false` (default,
     * the socket's address), `true` (any proxy), a hop count, or comma-separated addresses/subnets.
     */
    TRUST_PROXY: trustProxy,
    /** Failed authentications one client address may make per minute before it is answered 429. */
    AUTH_FAILURES_PER_MINUTE: z.coerce.number().int().positive().default(20),
    /** How long an unknown credential is remembered as unknown (no identity call meanwhile); 0 disables. */
    AUTH_NEGATIVE_CACHE_TTL_MS: z.coerce.number().int().min(0).default(5_000),
    /** Time allowed for a request's headers (node's headersTimeout); answered 408. */
    HEADERS_TIMEOUT_MS: z.coerce.number().int().positive().default(10_000),
    /** Time allowed for reading a request body; a slower body is answered 408. */
    BODY_TIMEOUT_MS: z.coerce.number().int().positive().default(30_000),
    /** Largest cost-data upload, in bytes as sent (compressed when gzip); 2 GiB by default. Larger is 413. */
    UPLOAD_MAX_BYTES: z.coerce
      .number()
      .int()
      .positive()
      .default(2 * 1024 ** 3),
    /** An upload that sends nothing for this long is answered 408 and cancelled. */
    UPLOAD_IDLE_TIMEOUT_MS: z.coerce.number().int().positive().default(30_000),
    /** How long the answer to a POST with an Idempotency-Key is kept for replay (24 h, as Stripe). */
    IDEMPOTENCY_TTL_MS: z.coerce
      .number()
      .int()
      .positive()
      .default(24 * 60 * 60 * 1000),
    /**
     * How long a key stays locked by a request that never finishes (a gateway that died mid-way): retries
     * meanwhile get 409 with Retry-After, then the owning service answers them from its record of the key.
     */
    IDEMPOTENCY_LOCK_TTL_MS: z.coerce.number().int().positive().default(10_000),
  })
  .refine(
    // A request still arriving when its concurrency slot expires would run beside a replacement. The slot
    // is taken once the headers are in; the body then has BODY_TIMEOUT_MS (an upload renews its slot).
    (c) => c.BODY_TIMEOUT_MS < c.RATE_LIMIT_LEASE_TTL_MS,
    {
      path: ['BODY_TIMEOUT_MS'],
      message: 'BODY_TIMEOUT_MS must be below RATE_LIMIT_LEASE_TTL_MS',
    },
  )
  .refine(
    // A lock expiring while its backend call still runs would let a retry run beside it: the service still
    // acts once, but the retry would wait on the first attempt instead of being told 409 at once.
    (c) => c.IDEMPOTENCY_LOCK_TTL_MS > c.RPC_DEADLINE_MS,
    { path: ['IDEMPOTENCY_LOCK_TTL_MS'], message: 'IDEMPOTENCY_LOCK_TTL_MS must be above RPC_DEADLINE_MS' },
  );

export type GatewayConfig = z.infer<typeof gatewayConfig>;

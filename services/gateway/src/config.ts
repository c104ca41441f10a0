import { baseConfig, port, z } from '@costgov/config';

export const gatewayConfig = baseConfig.extend({
  PORT: port(8080),
  HOST: z.string().default('0.0.0.0'),
  METRICS_PORT: port(9464),
  IDENTITY_ADDR: z.string().default('127.0.0.1:50051'),
  BUDGETS_ADDR: z.string().default('127.0.0.1:50052'),
  VIOLATIONS_ADDR: z.string().default('127.0.0.1:50053'),
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
  /** How long a graceful stop waits for requests in flight. */
  SHUTDOWN_GRACE_MS: z.coerce.number().int().min(0).default(10_000),
});

export type GatewayConfig = z.infer<typeof gatewayConfig>;

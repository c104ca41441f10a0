import { baseConfig, z } from '@costgov/config';
import { defaultChargeGraceMs } from './scans/abandoned-charges';

/** What the scanner reads beyond the variables every service reads (libs/runtime's serviceConfig). */
export const scannerConfig = baseConfig
  .pick({ RPC_DEADLINE_MS: true })
  .extend({
    /** identity's gRPC address: scan credits are debited and refunded there. */
    IDENTITY_ADDR: z.string().min(1).default('127.0.0.1:50051'),
    /** budgets' gRPC address: a scanned project (team, status, connections) is read there. */
    BUDGETS_ADDR: z.string().min(1).default('127.0.0.1:50052'),
    /** costs' gRPC address: the scanned connections' cost data is read there. */
    COSTS_ADDR: z.string().min(1).default('127.0.0.1:50054'),
    /** api: gRPC services only; worker: runs scans (gRPC serves health only); all: both (the default). */
    SCANNER_MODE: z.enum(['api', 'worker', 'all']).default('all'),
    /** A scan `running` whose heartbeat is older than this is failed by the sweeper and refunded. */
    SCAN_STALE_MS: z.coerce.number().int().min(100).default(120_000),
    /**
     * A scan `running` with no progress at all this long (no heartbeat of its own or of any shard, no
     * shard stored), even one whose shards or merge wait in the queue, is failed and refunded.
     */
    SCAN_MAX_QUIET_MS: z.coerce.number().int().min(1_000).default(1_800_000),
    /**
     * A scan whose rules meet an unavailable dependency (costs, identity, Postgres) is retried, with
     * backoff, until this long after that shard's (or plan's, or merge's) first outage; past it, it is
     * failed and refunded. 0: never retried.
     */
    SCAN_RETRY_DEADLINE_MS: z.coerce.number().int().min(0).max(3_600_000).default(90_000),
    /**
     * A scan's credits charged in identity whose scan was never stored (the API process died between the
     * two, and no retry with its Idempotency-Key finished it) are given back after this long.
     */
    SCAN_CHARGE_GRACE_MS: z.coerce.number().int().min(1_000).default(defaultChargeGraceMs),
    /** How often a worker reports a running scan (heartbeat_at and a `working` ack). */
    SCAN_HEARTBEAT_MS: z.coerce.number().int().min(50).default(5_000),
    /** How long the work queue waits for an ack (or a heartbeat) before another worker gets the scan. */
    SCAN_ACK_WAIT_MS: z.coerce.number().int().min(100).default(30_000),
    /**
     * A scan is split into one shard per this many resources (at least one, at most SCAN_MAX_SHARDS);
     * any worker runs any shard, so a large scan is spread over the workers.
     */
    SCAN_SHARD_RESOURCES: z.coerce.number().int().min(1).max(10_000_000).default(10_000),
    /** Most shards one scan is split into (each is a message on the work queue and a row). */
    SCAN_MAX_SHARDS: z.coerce.number().int().min(1).max(1_024).default(64),
    /**
     * Test and benchmark aid: each shard of a scan waits this long after reading its data, standing in
     * for a slow shard (a worker can then be killed mid-shard). 0, the default, in production.
     */
    SCAN_EXTRA_DELAY_MS: z.coerce.number().int().min(0).max(600_000).default(0),
    /**
     * Least rise of a day's usage-based spend over its baseline, in US dollars, that the anomaly rules
     * flag, for a team that set no minimum daily impact of its own (identity TeamSettings). Put in the
     * data's currency with the operator's exchange rate, else an approximate table of common currencies
     * (scans/min-daily-impact.ts), else used as is.
     */
    ANOMALY_MIN_DAILY_IMPACT: z.coerce.number().min(0).default(50),
    /** Scan messages (plans, shards, merges) one worker process works on at once. */
    SCAN_CONCURRENCY: z.coerce.number().int().min(1).max(64).default(2),
    /**
     * Today's cost posture of a scope is reused for this long before it is computed again (four calls to
     * budgets, identity and costs); 0 computes it on every read. A change shows within this delay.
     */
    POSTURE_CACHE_MS: z.coerce.number().int().min(0).max(300_000).default(5_000),
  })
  // An attempt makes a few calls, each within RPC_DEADLINE_MS: its charge must not be given back under it.
  .refine((c) => c.SCAN_CHARGE_GRACE_MS >= 4 * c.RPC_DEADLINE_MS, {
    message: 'must be at least 4 times RPC_DEADLINE_MS',
    path: ['SCAN_CHARGE_GRACE_MS'],
  })
  // A heartbeat must come before the queue gives up on the message, and well before the sweeper does.
  .refine((c) => c.SCAN_HEARTBEAT_MS < c.SCAN_ACK_WAIT_MS, {
    message: 'must be shorter than SCAN_ACK_WAIT_MS',
    path: ['SCAN_HEARTBEAT_MS'],
  })
  .refine((c) => c.SCAN_MAX_QUIET_MS >= c.SCAN_STALE_MS, {
    message: 'must be at least SCAN_STALE_MS',
    path: ['SCAN_MAX_QUIET_MS'],
  })
  .refine((c) => c.SCAN_HEARTBEAT_MS * 3 < c.SCAN_STALE_MS, {
    message: 'must be under a third of SCAN_STALE_MS',
    path: ['SCAN_HEARTBEAT_MS'],
  });

export type ScannerConfig = z.infer<typeof scannerConfig>;

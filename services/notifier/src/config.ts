import { z } from '@costgov/config';

const flag = z
  .enum(['true', 'false', '1', '0', ''])
  .default('false')
  .transform((value) => value === 'true' || value === '1');

/** What the notifier reads beyond the variables every service reads (libs/runtime's serviceConfig). */
export const notifierConfig = z
  .object({
    /**
     * Lifts the SSRF guard: webhooks may target private, loopback and other non-public addresses, but
     * never cloud metadata (link-local and the clouds' metadata addresses). For development, tests and
     * in-cluster receivers.
     */
    WEBHOOK_ALLOW_PRIVATE_NETWORKS: flag,
    /**
     * Comma-separated host names (or IP literals) exempt from the SSRF guard, e.g. an internal relay. A
     * listed IP literal opens even a cloud metadata address; a listed name never resolves to one.
     */
    WEBHOOK_ALLOWED_HOSTS: z
      .string()
      .default('')
      .transform((value) =>
        value
          .split(',')
          .map((host) => host.trim().toLowerCase())
          .filter(Boolean),
      ),
    /** How long one delivery attempt may take (connect, answer and the first 1 KiB of its body). */
    WEBHOOK_TIMEOUT_MS: z.coerce.number().int().min(10).max(60_000).default(10_000),
    /** How often each replica looks for due deliveries (new deliveries also wake it at once). */
    WEBHOOK_POLL_MS: z.coerce.number().int().min(10).max(60_000).default(1_000),
    /** How long a claimed delivery is held by the replica that claimed it; a killed replica's return after it. */
    WEBHOOK_LEASE_MS: z.coerce.number().int().min(100).max(600_000).default(60_000),
    /** Days a finished (succeeded or failed) delivery and its attempts are kept in the log. */
    WEBHOOK_RETENTION_DAYS: z.coerce.number().int().min(1).max(3650).default(30),
    /** Deliveries one replica claims and sends at once. */
    WEBHOOK_BATCH_SIZE: z.coerce.number().int().min(1).max(500).default(20),
  })
  // A lease that ran out mid-attempt would let another replica send the same attempt.
  .refine((c) => c.WEBHOOK_TIMEOUT_MS * 2 <= c.WEBHOOK_LEASE_MS, {
    message: 'must be at least twice WEBHOOK_TIMEOUT_MS',
    path: ['WEBHOOK_LEASE_MS'],
  });

export type NotifierConfig = z.infer<typeof notifierConfig>;

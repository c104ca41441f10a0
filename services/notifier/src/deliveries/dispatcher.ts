import { randomUUID } from 'node:crypto';
import {
  context,
  propagation,
  ROOT_CONTEXT,
  SpanKind,
  SpanStatusCode,
  trace,
  type Context,
} from '@opentelemetry/api';
import { Webhook } from 'standardwebhooks';
import type { Db, Listening, Queryable } from '@costgov/db';
import type { Logger } from '@costgov/log';
import { untraced } from '@costgov/telemetry';
import { deliveriesChannel, type DeliveryStatus } from './delivery';
import { deliveryMetrics } from './metrics';
import { failingDisableMs, nextAttemptAt } from './schedule';
import type { AttemptResult, Send } from './send';

const tracer = trace.getTracer('@costgov/notifier');

/** The attempt cannot be recorded by this dispatcher; the transaction is rolled back. */
class LeaseLost extends Error {}

export const userAgent = 'costgov-webhooks/1.0 (+https://www.standardwebhooks.com)';

export interface DispatcherOptions {
  db: Db;
  send: Send;
  now: () => Date;
  logger: Logger;
  /** In [0, 1), as Math.random: the jitter of the retry schedule. */
  random?: () => number;
  /** How long a claim holds a delivery; after it another dispatcher may take it. */
  leaseMs: number;
  batchSize: number;
  /** Pause between looks for due deliveries; new ones also wake the loop at once. */
  pollMs: number;
  /** Finished deliveries (and their attempts) are deleted this long after their last change. */
  retentionMs: number;
}

/** How often a replica deletes finished deliveries past the retention. */
const sweepEveryMs = 3600_000;

interface Claimed {
  id: string;
  webhook_id: string;
  team_id: string;
  event_type: string;
  payload: string;
  traceparent: string | null;
  tracestate: string | null;
  manual_requested: boolean;
  /** Manual retries asked for up to the claim. */
  manual_requests: number;
  scheduled_attempts: number;
  url: string;
  secret: string;
  previous_secret: string | null;
  previous_secret_expires_at: Date | null;
}

/**
 * Signatures for `webhook-signature`: the current secret's, and during a rotation overlap the previous
 * secret's too, space-separated (Standard Webhooks lets a receiver accept either).
 */
function signatures(row: Claimed, msgId: string, at: Date): string {
  const secrets = [row.secret];
  if (row.previous_secret && row.previous_secret_expires_at && new Date(row.previous_secret_expires_at) > at)
    secrets.push(row.previous_secret);
  return secrets.map((secret) => new Webhook(secret).sign(msgId, at, row.payload)).join(' ');
}

/**
 * Where the attempt goes, for its span: host, port and scheme only; the path and query of a webhook URL
 * often carry a token.
 */
function targetAttributes(url: string): Record<string, string | number> {
  try {
    const parsed = new URL(url);
    const port = parsed.port ? Number(parsed.port) : parsed.protocol === 'https:' ? 443 : 80;
    return {
      'url.scheme': parsed.protocol.replace(/:$/, ''),
      'server.address': parsed.hostname.replace(/^\[|\]$/g, ''),
      'server.port': port,
    };
  } catch {
    return {};
  }
}

/** What an attempt that could not even be made (the request could not be signed, say) records. */
const notMade = (reason: string): AttemptResult => ({ status: 0, excerpt: reason });

function traceContextOf(row: Claimed): Context {
  if (!row.traceparent) return ROOT_CONTEXT;
  const carrier: Record<string, string> = { traceparent: row.traceparent };
  if (row.tracestate) carrier.tracestate = row.tracestate;
  return propagation.extract(ROOT_CONTEXT, carrier);
}

/**
 * Sends due deliveries. Each replica runs one; they share the work through the database: a claim takes
 * due rows with FOR UPDATE SKIP LOCKED and stamps a lease, so two dispatchers never send the same
 * attempt, and the rows of a replica killed mid-attempt are taken again once its lease ran out. An
 * attempt is recorded only by the holder of the lease.
 */
export function createDispatcher({
  db,
  send,
  now,
  logger,
  random = Math.random,
  leaseMs,
  batchSize,
  pollMs,
  retentionMs,
}: DispatcherOptions) {
  const log = logger.child({ component: 'webhook-dispatcher' });

  async function claim(): Promise<Array<Claimed & { token: string }>> {
    const at = now();
    const token = randomUUID();
    const { rows } = await db.query<Claimed>(
      `WITH due AS (
         SELECT d.id FROM deliveries d JOIN webhooks w ON w.id = d.webhook_id
         WHERE d.status = 'pending' AND w.enabled AND d.next_attempt_at <= $1
           AND (d.lease_until IS NULL OR d.lease_until <= $1)
         ORDER BY d.next_attempt_at, d.id
         LIMIT $2
         FOR UPDATE OF d SKIP LOCKED
       ), claimed AS (
         UPDATE deliveries d SET lease_until = $3, lease_token = $4 FROM due WHERE d.id = due.id
         RETURNING d.id, d.webhook_id, d.team_id, d.event_type, d.payload, d.traceparent, d.tracestate,
           d.manual_requested, d.manual_requests, d.scheduled_attempts
       )
       SELECT c.*, w.url, w.secret, w.previous_secret, w.previous_secret_expires_at
       FROM claimed c JOIN webhooks w ON w.id = c.webhook_id`,
      [at, batchSize, new Date(at.getTime() + leaseMs), token],
    );
    return rows.map((row) => ({ ...row, token }));
  }

  /** One attempt in a CLIENT span that continues the trace of the event it delivers. */
  async function attempt(row: Claimed): Promise<{ result: AttemptResult; at: Date; latencyMs: number }> {
    const at = now();
    const span = tracer.startSpan(
      'webhook deliver',
      {
        kind: SpanKind.CLIENT,
        attributes: {
          'http.request.method': 'POST',
          ...targetAttributes(row.url),
          'webhook.id': row.webhook_id,
          'webhook.delivery.id': row.id,
          'cloudevents.event_type': row.event_type,
        },
      },
      traceContextOf(row),
    );
    const started = performance.now();
    try {
      const spanContext = trace.setSpan(context.active(), span);
      const result = await context.with(spanContext, async () => {
        let signature: string;
        try {
          signature = signatures(row, row.id, at);
        } catch (error) {
          log.error({ err: error, webhook_id: row.webhook_id }, 'webhook request could not be signed');
          return notMade('the request could not be signed');
        }
        const headers: Record<string, string> = {
          'content-type': 'application/cloudevents+json; charset=utf-8',
          'user-agent': userAgent,
          'webhook-id': row.id,
          'webhook-timestamp': Math.floor(at.getTime() / 1000).toString(),
          'webhook-signature': signature,
        };
        // The receiver continues this span's trace. The HTTP instrumentation records no span below it:
        // its url.full would show the URL's path, which is often the receiver's secret (Slack, Discord).
        propagation.inject(spanContext, headers);
        try {
          return await untraced(() => send({ url: row.url, body: row.payload, headers }));
        } catch (error) {
          log.error({ err: error, delivery_id: row.id }, 'webhook request failed unexpectedly');
          return notMade('the request could not be made');
        }
      });
      if (result.status > 0) span.setAttribute('http.response.status_code', result.status);
      if (!(result.status >= 200 && result.status < 300))
        span.setStatus({ code: SpanStatusCode.ERROR, message: result.excerpt.slice(0, 200) });
      return { result, at, latencyMs: Math.round(performance.now() - started) };
    } finally {
      span.end();
    }
  }

  /**
   * Records an attempt and what follows from it, if this dispatcher still holds the lease. The endpoint
   * row is locked first, so the records of one endpoint's attempts (and its disabling) take turns.
   */
  async function record(
    row: Claimed & { token: string },
    { result, at, latencyMs }: { result: AttemptResult; at: Date; latencyMs: number },
  ): Promise<void> {
    const success = result.status >= 200 && result.status < 300;
    const outcome = success ? 'success' : 'failure';
    const trigger = row.manual_requested ? 'manual' : 'scheduled';
    const scheduled = row.scheduled_attempts + (trigger === 'scheduled' ? 1 : 0);
    let status = 'succeeded' as DeliveryStatus;
    let disabled: { since: Date; ended: number } | undefined;
    const recorded = await db
      .transaction(async (tx) => {
        const { rows: endpoint } = await tx.query<{ enabled: boolean; disabled_reason: string | null }>(
          'SELECT enabled, disabled_reason FROM webhooks WHERE id = $1 FOR UPDATE',
          [row.webhook_id],
        );
        if (!endpoint[0]) throw new LeaseLost('the webhook was deleted');
        let next: Date | undefined;
        if (success) {
          await tx.query('UPDATE webhooks SET failing_since = NULL WHERE id = $1', [row.webhook_id]);
        } else {
          disabled = await noteFailure(tx, row.webhook_id, at);
          const failing = disabled !== undefined || endpoint[0].disabled_reason === 'failing';
          next = failing ? undefined : nextAttemptAt(scheduled, at, random);
          status = next ? 'pending' : 'failed';
        }
        const endedByFailing =
          disabled !== undefined || (!endpoint[0].enabled && endpoint[0].disabled_reason === 'failing');
        // A manual retry asked for while this attempt was under way (after the claim) is still owed: the
        // API answered 202. The record clears only requests made before its claim; a later one keeps the
        // delivery pending and due (on a manually disabled endpoint it waits, as pending deliveries do).
        // An endpoint disabled as failing ends it all the same.
        const changedAt = now();
        const owed = `manual_requested AND manual_requests <> $7::integer AND $8::boolean`;
        const { rows } = await tx.query<{ attempts: number; status: DeliveryStatus }>(
          `UPDATE deliveries SET attempts = attempts + 1, scheduled_attempts = $3,
             status = CASE WHEN ${owed} THEN 'pending' ELSE $4::text END,
             next_attempt_at = CASE WHEN ${owed} THEN $6::timestamptz ELSE $5::timestamptz END,
             manual_requested = ${owed}, lease_until = NULL, lease_token = NULL, updated_at = $6
           WHERE id = $1 AND lease_token = $2 RETURNING attempts, status`,
          [
            row.id,
            row.token,
            scheduled,
            status,
            next ?? null,
            changedAt,
            row.manual_requests,
            !endedByFailing,
          ],
        );
        // The lease ran out and another dispatcher took the delivery: its record wins; nothing of this one stays.
        if (!rows[0]) throw new LeaseLost('the lease ran out and another dispatcher took the delivery');
        status = rows[0].status;
        await tx.query(
          `INSERT INTO delivery_attempts (delivery_id, attempt, attempted_at, response_status, latency_ms,
             response_excerpt, outcome, trigger) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`,
          [row.id, rows[0].attempts, at, result.status, latencyMs, result.excerpt, outcome, trigger],
        );
        return true;
      })
      .catch((error: unknown) => {
        if (!(error instanceof LeaseLost)) throw error;
        log.warn({ delivery_id: row.id, reason: error.message }, 'webhook attempt not recorded');
        return false;
      });
    deliveryMetrics.attempts.inc({ outcome, trigger });
    deliveryMetrics.duration.observe({ outcome }, latencyMs / 1000);
    if (!recorded) return;
    if (status === 'failed') deliveryMetrics.exhausted.inc();
    if (disabled) {
      deliveryMetrics.disabled.inc();
      deliveryMetrics.exhausted.inc(disabled.ended);
      log.warn(
        {
          webhook_id: row.webhook_id,
          failing_since: disabled.since.toISOString(),
          deliveries_failed: disabled.ended,
        },
        'webhook disabled: every attempt failed for 5 days',
      );
    }
    log.info(
      {
        delivery_id: row.id,
        webhook_id: row.webhook_id,
        event_type: row.event_type,
        response_status: result.status,
        outcome,
        trigger,
        status,
      },
      'webhook attempt',
    );
  }

  /**
   * Notes a failure on the endpoint; one with no success since its first failure 5 or more days ago is
   * disabled as `failing`, and its other pending deliveries end as failed.
   */
  async function noteFailure(
    tx: Queryable,
    webhookId: string,
    at: Date,
  ): Promise<{ since: Date; ended: number } | undefined> {
    const { rows } = await tx.query<{ failing_since: Date; enabled: boolean }>(
      `UPDATE webhooks SET failing_since = COALESCE(failing_since, $2) WHERE id = $1 RETURNING failing_since, enabled`,
      [webhookId, at],
    );
    const since = new Date(rows[0]!.failing_since);
    if (!rows[0]!.enabled || at.getTime() - since.getTime() < failingDisableMs) return undefined;
    await tx.query(
      `UPDATE webhooks SET enabled = false, disabled_reason = 'failing', disabled_at = $2, updated_at = $2 WHERE id = $1`,
      [webhookId, at],
    );
    const ended = await tx.query(
      `UPDATE deliveries SET status = 'failed', next_attempt_at = NULL, manual_requested = false, updated_at = $2
       WHERE webhook_id = $1 AND status = 'pending' AND (lease_token IS NULL OR lease_until <= $2)`,
      [webhookId, at],
    );
    return { since, ended: ended.rowCount };
  }

  /** Claims the due deliveries (one batch), sends them at once and records each; returns how many. */
  async function runOnce(): Promise<number> {
    const claimed = await claim();
    await Promise.all(
      claimed.map(async (row) => {
        try {
          await record(row, await attempt(row));
        } catch (error) {
          // The database went away mid-way: the lease runs out and the delivery is attempted again.
          log.error({ err: error, delivery_id: row.id }, 'webhook attempt not recorded');
        }
      }),
    );
    return claimed.length;
  }

  /**
   * Deletes succeeded and failed deliveries whose last change is older than the retention, with their
   * attempts; pending ones are kept whatever their age. Returns how many went.
   */
  async function sweep(): Promise<number> {
    const { rowCount } = await db.query(
      `DELETE FROM deliveries WHERE status <> 'pending' AND updated_at < $1`,
      [new Date(now().getTime() - retentionMs)],
    );
    if (rowCount > 0) log.info({ deliveries: rowCount }, 'deleted deliveries past the retention');
    return rowCount;
  }

  let sweptAt = 0;
  /** One batch, and the retention sweep when an hour has passed since the last. */
  async function tick(): Promise<number> {
    const sent = await runOnce();
    if (now().getTime() - sweptAt >= sweepEveryMs) {
      sweptAt = now().getTime();
      await sweep();
    }
    return sent;
  }

  let timer: NodeJS.Timeout | undefined;
  let running: Promise<void> | undefined;
  let again = false;
  let stopped = true;
  let listening: Listening | undefined;

  /** Runs batches until none is full; a wake-up during a run starts another one after it. */
  function wake(): void {
    if (stopped) return;
    if (running) {
      again = true;
      return;
    }
    clearTimeout(timer);
    running = (async () => {
      try {
        do {
          again = false;
          if ((await tick()) >= batchSize) again = true;
        } while (again && !stopped);
      } catch (error) {
        log.warn({ err: error }, 'looking for due webhook deliveries failed; retrying');
      } finally {
        running = undefined;
        if (!stopped) timer = setTimeout(wake, pollMs);
      }
    })();
  }

  async function listen(): Promise<void> {
    if (!db.listen || stopped) return;
    try {
      listening = await db.listen(deliveriesChannel, wake, () => {
        listening = undefined;
        // Polling goes on meanwhile; the listening connection is tried again after a pause.
        setTimeout(() => void listen(), pollMs * 5).unref();
      });
      if (stopped) await listening.close();
    } catch (error) {
      log.warn({ err: error }, 'cannot listen for new deliveries; polling only');
      setTimeout(() => void listen(), pollMs * 5).unref();
    }
  }

  return {
    runOnce,
    sweep,
    /** Starts the loop: polls every pollMs and wakes at once on each new or retried delivery. */
    async start(): Promise<void> {
      stopped = false;
      await listen();
      wake();
    },
    /** Stops the loop and waits for the attempts under way to be recorded. */
    async stop(): Promise<void> {
      stopped = true;
      clearTimeout(timer);
      await listening?.close();
      await running;
    },
  };
}

export type Dispatcher = ReturnType<typeof createDispatcher>;

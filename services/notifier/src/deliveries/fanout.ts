import { context, propagation } from '@opentelemetry/api';
import type { CloudEvent } from '@costgov/bus';
import type { Queryable } from '@costgov/db';
import type { IdGenerator } from '@costgov/ids';
import type { Logger } from '@costgov/log';
import { isDeliverable, patternsMatch, producingServices } from '../events/catalogue';
import { deliveriesChannel } from './delivery';

/** Every event of every producing service; the handler keeps the deliverable ones. */
export const consumedEventTypes = producingServices.map((service) => `${service}.>`);

/** The team an event belongs to: every public payload carries it (`teamId` in proto JSON). */
function teamOf(event: CloudEvent): string | undefined {
  const data = event.data as { teamId?: unknown; team_id?: unknown } | null;
  const team = data?.teamId ?? data?.team_id;
  return typeof team === 'string' && team !== '' ? team : undefined;
}

/**
 * The body every attempt sends: the CloudEvent in structured mode. The trace context is left out: it
 * describes our processes, not the event, and travels in the request's own `traceparent` header.
 */
export function payloadOf(event: CloudEvent): string {
  const { traceparent: _traceparent, tracestate: _tracestate, ...body } = event;
  return JSON.stringify(body);
}

/**
 * Turns an event into one pending delivery per enabled webhook of its team whose patterns match, in
 * the transaction that records the event in the inbox (a redelivered event adds nothing). The
 * consumer's trace context is kept with each delivery, so its attempts continue the event's trace.
 */
export function deliveryFanout({
  newId,
  now,
  logger,
}: {
  newId: IdGenerator;
  now: () => Date;
  logger: Logger;
}) {
  return async function fanOut(tx: Queryable, event: CloudEvent): Promise<void> {
    if (!isDeliverable(event.type)) return;
    const teamId = teamOf(event);
    if (!teamId) {
      // Retrying cannot add a team to the payload: it is logged and passed over.
      logger.error({ event_id: event.id, event_type: event.type }, 'event without a team: not delivered');
      return;
    }
    const { rows } = await tx.query<{ id: string; events: string[] }>(
      'SELECT id, events FROM webhooks WHERE team_id = $1 AND enabled ORDER BY id',
      [teamId],
    );
    const targets = rows.filter((webhook) => patternsMatch(webhook.events, event.type));
    if (targets.length === 0) return;
    const trace: Record<string, string> = {};
    propagation.inject(context.active(), trace);
    const payload = payloadOf(event);
    const at = now();
    for (const webhook of targets) {
      await tx.query(
        `INSERT INTO deliveries (id, webhook_id, team_id, event_id, event_type, payload, traceparent, tracestate,
           next_attempt_at, created_at, updated_at)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $9, $9)
         ON CONFLICT (webhook_id, event_id) DO NOTHING`,
        [
          newId('webhookMessage'),
          webhook.id,
          teamId,
          event.id,
          event.type,
          payload,
          trace.traceparent ?? event.traceparent ?? null,
          trace.tracestate ?? event.tracestate ?? null,
          at,
        ],
      );
    }
    // Delivered to listeners when (and only if) the transaction commits: dispatchers wake at once.
    await tx.query(`SELECT pg_notify('${deliveriesChannel}', '')`);
    logger.debug(
      { event_id: event.id, event_type: event.type, webhooks: targets.length },
      'deliveries scheduled',
    );
  };
}

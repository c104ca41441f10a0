import {
  enumFilter,
  limitOffset,
  pageMeta,
  pageOf,
  textFilter,
  type Db,
  type PageMeta,
  type Queryable,
} from '@costgov/db';
import type { KeyedEffect } from '@costgov/runtime';
import { ConflictError, NotFoundError } from '@costgov/errors';
import { looksLikeId } from '@costgov/ids';
import { findWebhook } from '../webhooks/webhooks';
import {
  deliveriesChannel,
  deliveryColumns,
  deliveryStatuses,
  toDelivery,
  type AttemptRow,
  type Delivery,
  type DeliveryRow,
} from './delivery';

export interface ListDeliveriesInput {
  status?: string;
  eventType?: string;
  page?: number;
  perPage?: number;
}

async function attemptsOf(tx: Queryable, ids: string[]): Promise<AttemptRow[]> {
  if (ids.length === 0) return [];
  const { rows } = await tx.query<AttemptRow>(
    `SELECT delivery_id, attempt, attempted_at, response_status, latency_ms, response_excerpt, outcome, trigger
     FROM delivery_attempts WHERE delivery_id = ANY($1::text[]) ORDER BY delivery_id, attempt`,
    [ids],
  );
  return rows;
}

/** The delivery log of a team's endpoints, and manual retries. */
export function deliveriesFactory({ db, now }: { db: Db; now: () => Date }) {
  async function listDeliveries(
    teamId: string,
    webhookId: string,
    input: ListDeliveriesInput,
  ): Promise<{ deliveries: Delivery[]; meta: PageMeta }> {
    const page = pageOf(input);
    const filters = {
      status: enumFilter('status', input.status, deliveryStatuses),
      event_type: textFilter('event_type', input.eventType),
    };
    await findWebhook(db, teamId, webhookId);
    const where = ['d.webhook_id = $1', 'd.team_id = $2'];
    const params: unknown[] = [webhookId, teamId];
    for (const [column, value] of Object.entries(filters)) {
      if (value !== undefined) where.push(`d.${column} = $${params.push(value)}`);
    }
    const filter = where.join(' AND ');
    const { limit, offset } = limitOffset(page);
    const [count, list] = await Promise.all([
      db.query<{ n: number }>(`SELECT count(*)::int AS n FROM deliveries d WHERE ${filter}`, params),
      db.query<DeliveryRow>(
        `SELECT ${deliveryColumns} FROM deliveries d WHERE ${filter}
         ORDER BY d.created_at DESC, d.id DESC LIMIT ${limit} OFFSET ${offset}`,
        params,
      ),
    ]);
    const attempts = await attemptsOf(
      db,
      list.rows.map((row) => row.id),
    );
    return {
      deliveries: list.rows.map((row) => toDelivery(row, attempts)),
      meta: pageMeta(page, count.rows[0]!.n),
    };
  }

  /**
   * Asks for an attempt now, whatever the delivery's status (a failed one too): a dispatcher makes it
   * within a moment, as a `manual` attempt with the same webhook-id. The delivery is pending until then.
   */
  async function retryDelivery(
    teamId: string,
    webhookId: string,
    deliveryId: string,
    effect?: KeyedEffect<Delivery>,
  ): Promise<Delivery> {
    if (!looksLikeId('webhookMessage', deliveryId)) throw new NotFoundError('Delivery', deliveryId);
    return db.transaction(async (tx) => {
      // Locked as a dispatcher's record locks it: an endpoint being disabled as failing (which ends its
      // pending deliveries) finishes first, and the retry is refused, instead of leaving a pending delivery
      // no dispatcher claims.
      const webhook = await findWebhook(tx, teamId, webhookId, true);
      if (!webhook.enabled) {
        throw new ConflictError(
          `Webhook '${webhookId}' is disabled (${webhook.disabled_reason}); enable it before retrying a delivery.`,
          [{ field: 'enabled', message: 'is false, must be true' }],
        );
      }
      const at = now();
      const { rows } = await tx.query<DeliveryRow>(
        `WITH retried AS (
           UPDATE deliveries d SET status = 'pending', manual_requested = true, manual_requests = manual_requests + 1,
             next_attempt_at = $4, updated_at = $4
           WHERE d.id = $1 AND d.webhook_id = $2 AND d.team_id = $3 RETURNING ${deliveryColumns}
         )
         SELECT retried.*, pg_notify('${deliveriesChannel}', '') FROM retried`,
        [deliveryId, webhookId, teamId, at],
      );
      if (!rows[0]) throw new NotFoundError('Delivery', deliveryId);
      const delivery = toDelivery(rows[0], await attemptsOf(tx, [deliveryId]));
      await effect?.record(tx, delivery);
      return delivery;
    });
  }

  return { listDeliveries, retryDelivery };
}

export type Deliveries = ReturnType<typeof deliveriesFactory>;

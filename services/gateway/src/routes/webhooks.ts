import { Router } from 'express';
import { timestampDate, type Timestamp } from '@bufbuild/protobuf/wkt';
import type { notifier } from '@costgov/contracts';
import type { RpcClient } from '@costgov/rpc';
import { sendData } from '../http/envelope';
import type { RequestValidators } from '../openapi/validator';
import { callContext } from '../http/call-context';
import { metaJson, pageOf } from '../http/paging';

type WebhooksClient = RpcClient<typeof notifier.WebhooksService>;

const iso = (ts: Timestamp | undefined) => (ts ? timestampDate(ts).toISOString() : null);

export const webhookJson = (w: notifier.Webhook) => ({
  id: w.id,
  url: w.url,
  events: w.events,
  description: w.description,
  enabled: w.enabled,
  disabled_reason: w.disabledReason || null,
  disabled_at: iso(w.disabledAt),
  previous_secret_expires_at: iso(w.previousSecretExpiresAt),
  created_at: iso(w.createdAt),
  updated_at: iso(w.updatedAt),
});

/** The webhook, and its secret when this answer is the one that shows it (create, rotation). */
const withSecretJson = ({ webhook, secret }: notifier.WebhookWithSecret) => ({
  ...webhookJson(webhook!),
  ...(secret === undefined ? {} : { secret }),
});

const attemptJson = (a: notifier.DeliveryAttempt) => ({
  attempt: a.attempt,
  attempted_at: iso(a.attemptedAt),
  // 0 in the contract means no answer came (timeout, refused connection or address).
  response_status: a.responseStatus || null,
  latency_ms: Number(a.latencyMs),
  response_excerpt: a.responseExcerpt,
  outcome: a.outcome,
  trigger: a.trigger,
});

export const deliveryJson = (d: notifier.Delivery) => ({
  id: d.id,
  webhook_id: d.webhookId,
  event_id: d.eventId,
  event_type: d.eventType,
  status: d.status,
  attempt_count: d.attempts,
  next_attempt_at: iso(d.nextAttemptAt),
  attempts: d.attemptLog.map(attemptJson),
  created_at: iso(d.createdAt),
  updated_at: iso(d.updatedAt),
});

/** REST ↔ gRPC mapping of /v1/guard/webhooks (an extension); each route first validates its operation. */
export function webhookRoutes(client: WebhooksClient, validate: RequestValidators): Router {
  const router = Router();

  router.get('/', validate('listWebhooks'), async (req, res) => {
    const query = req.query as { enabled?: string; page?: string; per_page?: string };
    const result = await client.listWebhooks(
      {
        enabled: query.enabled === undefined ? undefined : query.enabled === 'true',
        page: pageOf(query),
      },
      callContext(req),
    );
    sendData(res, 200, result.webhooks.map(webhookJson), metaJson(result.meta!));
  });

  router.post('/', validate('createWebhook'), async (req, res) => {
    const body = req.body as { url: string; events: string[]; description?: string };
    const created = await client.createWebhook(
      { url: body.url, events: body.events, description: body.description ?? '' },
      callContext(req),
    );
    res.setHeader('Location', `/v1/guard/webhooks/${created.webhook!.id}`);
    sendData(res, 201, withSecretJson(created));
  });

  router.get('/:id', validate('getWebhook'), async (req, res) => {
    const webhook = await client.getWebhook({ id: String(req.params.id) }, callContext(req));
    sendData(res, 200, webhookJson(webhook));
  });

  router.patch('/:id', validate('updateWebhook'), async (req, res) => {
    const body = req.body as {
      url?: string;
      events?: string[];
      description?: string;
      enabled?: boolean;
      rotate_secret?: boolean;
      previous_secret_ttl_seconds?: number;
    };
    const updated = await client.updateWebhook(
      {
        id: String(req.params.id),
        url: body.url,
        events: body.events === undefined ? undefined : { values: body.events },
        description: body.description,
        enabled: body.enabled,
        rotateSecret: body.rotate_secret ?? false,
        previousSecretTtlSeconds:
          body.previous_secret_ttl_seconds === undefined
            ? undefined
            : BigInt(body.previous_secret_ttl_seconds),
      },
      callContext(req),
    );
    sendData(res, 200, withSecretJson(updated));
  });

  router.delete('/:id', validate('deleteWebhook'), async (req, res) => {
    await client.deleteWebhook({ id: String(req.params.id) }, callContext(req));
    res.status(204).end();
  });

  router.get('/:id/deliveries', validate('listWebhookDeliveries'), async (req, res) => {
    const query = req.query as { status?: string; event_type?: string; page?: string; per_page?: string };
    const result = await client.listDeliveries(
      {
        webhookId: String(req.params.id),
        status: query.status,
        eventType: query.event_type,
        page: pageOf(query),
      },
      callContext(req),
    );
    sendData(res, 200, result.deliveries.map(deliveryJson), metaJson(result.meta!));
  });

  router.post('/:id/deliveries/:delivery_id/retry', validate('retryWebhookDelivery'), async (req, res) => {
    const delivery = await client.retryDelivery(
      { webhookId: String(req.params.id), deliveryId: String(req.params.delivery_id) },
      callContext(req),
    );
    sendData(res, 202, deliveryJson(delivery));
  });

  return router;
}

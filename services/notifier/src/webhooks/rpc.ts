import { timestampFromDate } from '@bufbuild/protobuf/wkt';
import { notifier } from '@costgov/contracts';
import { BadRequestError } from '@costgov/errors';
import type { CallContext, ServiceImpl } from '@costgov/rpc';
import type { IdempotentCalls } from '@costgov/runtime';
import type { Deliveries } from '../deliveries/deliveries';
import type { Delivery } from '../deliveries/delivery';
import type { Webhook } from './webhook';
import type { WebhookWithSecret, Webhooks } from './webhooks';

function teamOf(ctx: CallContext): string {
  if (!ctx.teamId) throw new BadRequestError('The call carries no team (x-team-id metadata).');
  return ctx.teamId;
}

const timestamp = (at: Date | null) => (at ? timestampFromDate(at) : undefined);

const webhookMessage = (w: Webhook) => ({
  id: w.id,
  url: w.url,
  events: w.events,
  description: w.description,
  enabled: w.enabled,
  disabledReason: w.disabledReason ?? '',
  disabledAt: timestamp(w.disabledAt),
  previousSecretExpiresAt: timestamp(w.previousSecretExpiresAt),
  createdAt: timestampFromDate(w.createdAt),
  updatedAt: timestampFromDate(w.updatedAt),
});

const withSecret = ({ webhook, secret }: WebhookWithSecret) => ({
  webhook: webhookMessage(webhook),
  secret,
});

const deliveryMessage = (d: Delivery) => ({
  id: d.id,
  webhookId: d.webhookId,
  eventId: d.eventId,
  eventType: d.eventType,
  status: d.status,
  attempts: d.attempts,
  nextAttemptAt: timestamp(d.nextAttemptAt),
  attemptLog: d.attemptLog.map((a) => ({
    attempt: a.attempt,
    attemptedAt: timestampFromDate(a.attemptedAt),
    responseStatus: a.responseStatus,
    latencyMs: BigInt(a.latencyMs),
    responseExcerpt: a.responseExcerpt,
    outcome: a.outcome,
    trigger: a.trigger,
  })),
  createdAt: timestampFromDate(d.createdAt),
  updatedAt: timestampFromDate(d.updatedAt),
});

export function webhooksRpc(
  webhooks: Webhooks,
  deliveries: Deliveries,
  once: IdempotentCalls,
): ServiceImpl<typeof notifier.WebhooksService> {
  return {
    createWebhook: (request, ctx) =>
      once(ctx, 'CreateWebhook', notifier.WebhookWithSecretSchema, withSecret, (effect) =>
        webhooks.createWebhook(
          teamOf(ctx),
          { url: request.url, events: request.events, description: request.description },
          effect,
        ),
      ),
    async getWebhook(request, ctx) {
      return webhookMessage(await webhooks.getWebhook(teamOf(ctx), request.id));
    },
    async listWebhooks(request, ctx) {
      const { webhooks: page, meta } = await webhooks.listWebhooks(teamOf(ctx), {
        enabled: request.enabled,
        page: request.page?.page,
        perPage: request.page?.perPage,
      });
      return { webhooks: page.map(webhookMessage), meta };
    },
    async updateWebhook(request, ctx) {
      return withSecret(
        await webhooks.updateWebhook(teamOf(ctx), request.id, {
          url: request.url,
          events: request.events?.values,
          description: request.description,
          enabled: request.enabled,
          rotateSecret: request.rotateSecret,
          previousSecretTtlSeconds:
            request.previousSecretTtlSeconds === undefined
              ? undefined
              : Number(request.previousSecretTtlSeconds),
        }),
      );
    },
    async deleteWebhook(request, ctx) {
      await webhooks.deleteWebhook(teamOf(ctx), request.id);
      return {};
    },
    async listDeliveries(request, ctx) {
      const { deliveries: page, meta } = await deliveries.listDeliveries(teamOf(ctx), request.webhookId, {
        status: request.status,
        eventType: request.eventType,
        page: request.page?.page,
        perPage: request.page?.perPage,
      });
      return { deliveries: page.map(deliveryMessage), meta };
    },
    retryDelivery: (request, ctx) =>
      once(ctx, 'RetryDelivery', notifier.DeliverySchema, deliveryMessage, (effect) =>
        deliveries.retryDelivery(teamOf(ctx), request.webhookId, request.deliveryId, effect),
      ),
  };
}

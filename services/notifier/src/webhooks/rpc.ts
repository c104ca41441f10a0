import { notifier } from '@costgov/contracts';
import { messageWriter, teamScoped, type ServiceImpl } from '@costgov/rpc';
import type { IdempotentCalls } from '@costgov/runtime';
import type { Deliveries } from '../deliveries/deliveries';
import type { Webhook } from './webhook';
import type { WebhookWithSecret, Webhooks } from './webhooks';

const deliveryMessage = messageWriter(notifier.DeliverySchema);

const writeWebhook = messageWriter(notifier.WebhookSchema);
/** An enabled endpoint has no reason (null), which the message says with ''. */
const webhookMessage = (webhook: Webhook) =>
  writeWebhook({ ...webhook, disabledReason: webhook.disabledReason ?? '' });

const withSecret = ({ webhook, secret }: WebhookWithSecret) => ({ webhook: webhookMessage(webhook), secret });

export function webhooksRpc(
  webhooks: Webhooks,
  deliveries: Deliveries,
  once: IdempotentCalls,
): ServiceImpl<typeof notifier.WebhooksService> {
  return {
    createWebhook: teamScoped((request, ctx) =>
      once(ctx, 'CreateWebhook', notifier.WebhookWithSecretSchema, withSecret, (effect) =>
        webhooks.createWebhook(
          ctx.teamId,
          { url: request.url, events: request.events, description: request.description },
          effect,
        ),
      ),
    ),
    getWebhook: teamScoped(async (request, { teamId }) =>
      webhookMessage(await webhooks.getWebhook(teamId, request.id)),
    ),
    listWebhooks: teamScoped(async (request, { teamId }) => {
      const { webhooks: page, meta } = await webhooks.listWebhooks(teamId, {
        enabled: request.enabled,
        page: request.page?.page,
        perPage: request.page?.perPage,
      });
      return { webhooks: page.map(webhookMessage), meta };
    }),
    updateWebhook: teamScoped(async (request, { teamId }) =>
      withSecret(
        await webhooks.updateWebhook(teamId, request.id, {
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
      ),
    ),
    deleteWebhook: teamScoped(async (request, { teamId }) => {
      await webhooks.deleteWebhook(teamId, request.id);
      return {};
    }),
    listDeliveries: teamScoped(async (request, { teamId }) => {
      const { deliveries: page, meta } = await deliveries.listDeliveries(teamId, request.webhookId, {
        status: request.status,
        eventType: request.eventType,
        page: request.page?.page,
        perPage: request.page?.perPage,
      });
      return { deliveries: page.map(deliveryMessage), meta };
    }),
    retryDelivery: teamScoped((request, ctx) =>
      once(ctx, 'RetryDelivery', notifier.DeliverySchema, deliveryMessage, (effect) =>
        deliveries.retryDelivery(ctx.teamId, request.webhookId, request.deliveryId, effect),
      ),
    ),
  };
}

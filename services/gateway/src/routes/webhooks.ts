import { notifier } from '@costgov/contracts';
import type { RpcClient } from '@costgov/rpc';
import { operationTable } from '../rest/operation-table';

/**
 * /v1/guard/webhooks (an extension). A created or rotated endpoint's answer carries its `secret` beside
 * the endpoint's fields; a delivery's `attempt_count` and `attempts` are the proto's `attempts` and
 * `attempt_log`; a delivery retried is 202 (the attempt is queued).
 */
export const webhookOperations = (client: RpcClient<typeof notifier.WebhooksService>) =>
  operationTable(
    notifier.WebhooksService,
    client,
    {
      listWebhooks: { rpc: 'listWebhooks' },
      createWebhook: { rpc: 'createWebhook' },
      getWebhook: { rpc: 'getWebhook' },
      updateWebhook: { rpc: 'updateWebhook' },
      deleteWebhook: { rpc: 'deleteWebhook' },
      listWebhookDeliveries: { rpc: 'listDeliveries' },
      retryWebhookDelivery: { rpc: 'retryDelivery' },
    },
    {
      [notifier.DeliverySchema.typeName]: { attempts: 'attempt_count', attempt_log: 'attempts' },
      [notifier.ListDeliveriesRequestSchema.typeName]: { webhook_id: 'id' },
      [notifier.RetryDeliveryRequestSchema.typeName]: { webhook_id: 'id' },
    },
  );

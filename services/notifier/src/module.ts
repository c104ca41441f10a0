import path from 'node:path';
import { notifier } from '@costgov/contracts';
import { migrationsFrom } from '@costgov/db';
import type { ServiceModule } from '@costgov/runtime';
import { notifierConfig, type NotifierConfig } from './config';
import { bareHost, type AddressPolicy } from './deliveries/address-policy';
import { deliveriesFactory } from './deliveries/deliveries';
import { createDispatcher, type Dispatcher } from './deliveries/dispatcher';
import { consumedEventTypes, deliveryFanout } from './deliveries/fanout';
import { createSender, type Send } from './deliveries/send';
import { webhooksRpc } from './webhooks/rpc';
import { webhooksFactory } from './webhooks/webhooks';

export interface NotifierOptions {
  /** Replaces the HTTP sender (tests). */
  send?: Send;
  /** Jitter source of the retry schedule, in [0, 1); Math.random by default. */
  random?: () => number;
  /** false: no dispatch loop; tests call `dispatcher().runOnce()` with a controlled clock. Default true. */
  dispatchLoop?: boolean;
}

export type NotifierModule = ServiceModule<NotifierConfig> & {
  /** The dispatcher of the started module, for tests that drive the schedule themselves. */
  dispatcher(): Dispatcher;
};

/**
 * Notifier: webhook endpoints of a team (WebhooksService), a consumer turning every deliverable event
 * into deliveries, and the dispatcher that sends them (Standard Webhooks, retried on a schedule).
 */
export function notifierModule(options: NotifierOptions = {}): NotifierModule {
  let dispatcher: Dispatcher | undefined;
  return {
    name: 'notifier',
    migrations: migrationsFrom(path.join(__dirname, 'db/migrations')),
    config: notifierConfig,
    dispatcher() {
      if (!dispatcher) throw new Error('The notifier module has not started.');
      return dispatcher;
    },
    async start({ db, rpc, newId, now, config, logger, consume, once }) {
      const policy: AddressPolicy = {
        allowPrivateNetworks: config.WEBHOOK_ALLOW_PRIVATE_NETWORKS,
        allowedHosts: config.WEBHOOK_ALLOWED_HOSTS.map(bareHost),
      };
      if (policy.allowPrivateNetworks)
        logger.warn(
          'WEBHOOK_ALLOW_PRIVATE_NETWORKS is on: webhooks may reach private and loopback addresses (not cloud metadata)',
        );
      const webhooks = webhooksFactory({ db, newId, now, policy });
      const deliveries = deliveriesFactory({ db, now });
      rpc.add(notifier.WebhooksService, webhooksRpc(webhooks, deliveries, once));

      // One durable shared by every replica: each event is fanned out once (JetStream queue semantics).
      await consume({
        durable: 'notifier_webhook_events',
        types: consumedEventTypes,
        handler: deliveryFanout({ newId, now, logger }),
      });
      const started = createDispatcher({
        db,
        send: options.send ?? createSender({ policy, timeoutMs: config.WEBHOOK_TIMEOUT_MS, logger }),
        now,
        logger,
        random: options.random,
        leaseMs: config.WEBHOOK_LEASE_MS,
        batchSize: config.WEBHOOK_BATCH_SIZE,
        pollMs: config.WEBHOOK_POLL_MS,
        retentionMs: config.WEBHOOK_RETENTION_DAYS * 24 * 3600_000,
      });
      dispatcher = started;
      if (options.dispatchLoop !== false) await started.start();
      return () => started.stop();
    },
  };
}

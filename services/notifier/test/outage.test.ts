import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { notifier } from '@costgov/contracts';
import { UnavailableError } from '@costgov/errors';
import { newId } from '@costgov/ids';
import { createRpcClient, type RpcClient } from '@costgov/rpc';
import { startService, type RunningService } from '@costgov/runtime';
import {
  eventually,
  postgresUnavailable,
  startPostgresServer,
  testBus,
  type PostgresServer,
} from '@costgov/testing';
import { notifierModule } from '../src/module';
import { logger, teamCtx, violationCreated } from './fixture';
import { startReceiver, type Receiver } from './receiver';

const unavailable = postgresUnavailable();

/**
 * A Postgres of this file's own, killed under a running notifier (dispatch loop on): calls answer
 * UNAVAILABLE, nothing ends the process, and once Postgres is back the loop delivers again.
 */
describe.skipIf(unavailable)(
  `the notifier during a Postgres outage${unavailable ? ` (skipped: ${unavailable})` : ''}`,
  () => {
    let server: PostgresServer;
    let bus: Awaited<ReturnType<typeof testBus>>;
    let service: RunningService;
    let client: RpcClient<typeof notifier.WebhooksService>;
    let receiver: Receiver;
    const uncaught: unknown[] = [];
    const onUncaught = (error: unknown) => uncaught.push(error);

    beforeAll(async () => {
      process.on('uncaughtException', onUncaught);
      process.on('unhandledRejection', onUncaught);
      server = await startPostgresServer();
      bus = await testBus(logger);
      receiver = await startReceiver();
      service = await startService(notifierModule(), {
        logger,
        bus,
        databaseUrl: server.url,
        dataDir: 'memory',
        grpcAddress: '127.0.0.1:0',
        env: { WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true', WEBHOOK_POLL_MS: '50' },
      });
      client = createRpcClient(notifier.WebhooksService, `127.0.0.1:${service.port}`, { deadlineMs: 5_000 });
    }, 60_000);

    afterAll(async () => {
      process.off('uncaughtException', onUncaught);
      process.off('unhandledRejection', onUncaught);
      client?.close();
      await service?.stop();
      await bus?.close();
      await receiver?.close();
      await server?.close();
    });

    it('answers UNAVAILABLE while Postgres is down and delivers again once it is back', async () => {
      const ctx = teamCtx(newId('team'));
      const { webhook } = await client.createWebhook(
        { url: receiver.url(), events: ['violations.*'], description: '' },
        ctx,
      );
      await server.kill();
      // The pool may hand out a connection whose end it has not read yet: the outage shows within moments.
      const refusal = await eventually(
        () =>
          client.listWebhooks({}, ctx).then(
            () => undefined,
            (error: unknown) => error,
          ),
        5_000,
      );
      expect(refusal).toBeInstanceOf(UnavailableError);
      await expect(
        client.createWebhook({ url: receiver.url(), events: ['*'], description: '' }, ctx),
      ).rejects.toBeInstanceOf(UnavailableError);
      // An event during the outage waits in the bus (the consumer's transaction fails and is redelivered).
      const event = violationCreated(ctx.teamId);
      await bus.publish(event);
      await new Promise((resolve) => setTimeout(resolve, 500)); // the dispatch loop runs into the outage

      await server.start();
      await eventually(() => (receiver.received.length > 0 ? true : undefined), 60_000);
      expect(JSON.parse(receiver.received[0]!.body)).toMatchObject({ id: event.id });
      // The receiver has the request before the dispatcher records the answer.
      await eventually(async () => {
        const list = await client.listDeliveries({ webhookId: webhook!.id }, ctx);
        return list.deliveries.map((d) => d.status).join() === 'succeeded' ? true : undefined;
      }, 10_000);
      expect(uncaught).toEqual([]);
    }, 120_000);
  },
);

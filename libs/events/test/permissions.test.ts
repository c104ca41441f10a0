import { create } from '@bufbuild/protobuf';
import { jetstreamManager } from '@nats-io/jetstream';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { createNatsBus, encodePayload, type Bus, type CloudEvent } from '@costgov/bus';
import { events as messages } from '@costgov/contracts';
import { createLogger } from '@costgov/log';
import { eventually, natsServerBinary, startNatsServer, type NatsServer } from '@costgov/testing';
import { asyncApiDocument } from '../src/asyncapi';
import { connectEvents, type EventsClient, type EventsLogger } from '../src';

/**
 * The rights the AsyncAPI document lists for a consumer, tried on a nats-server whose consumer user has
 * those and nothing else: what another team's operator copies into their NATS configuration must work.
 */
const namespace = 'acme';
const durable = 'billing-breaches';
const type = 'budgets.budget.breached';
const { permissions } = asyncApiDocument().operations[type]!['x-jetstream'];
/** The document's publish rights for one durable, its templates filled in. */
const rightsOf = (durable: string) =>
  permissions.publish.map((subject) =>
    subject
      .replaceAll('{NAMESPACE}', namespace.toUpperCase())
      .replaceAll('{namespace}', namespace)
      .replaceAll('{durable}', durable),
  );

/** The platform publishes as `platform` (no credentials: no_auth_user); each consumer user is `user`. */
const config = (users: Record<string, string[]>) => `
accounts {
  APP {
    jetstream: enabled
    users: [
      { user: platform, password: platform }
${Object.entries(users)
  .map(
    ([user, publish]) =>
      `      { user: ${user}, password: ${user}, permissions: { publish: { allow: ${JSON.stringify(publish)} }, subscribe: { allow: ${JSON.stringify(permissions.subscribe)} } } }`,
  )
  .join('\n')}
    ]
  }
}
no_auth_user: platform
`;

const partialDurable = 'partial-breaches';
const withoutConsumerCreate = rightsOf(partialDurable).filter(
  (subject) => !subject.includes('.CONSUMER.CREATE.'),
);

describe.skipIf(!natsServerBinary())('a consumer with only the rights the AsyncAPI document lists', () => {
  const logger = createLogger('test', 'silent');
  const logged: string[] = [];
  const eventsLogger: EventsLogger = {
    warn: (_fields, message) => void logged.push(message),
    error: (_fields, message) => void logged.push(message),
  };
  let server: NatsServer;
  let bus: Bus;
  const open: { client?: EventsClient; nc?: NatsConnection }[] = [];

  beforeAll(async () => {
    server = await startNatsServer({
      config: config({ billing: rightsOf(durable), partial: withoutConsumerCreate }),
    });
    bus = await createNatsBus({ url: server.url, namespace, logger });
  });

  afterEach(async () => {
    for (const { client, nc } of open.splice(0)) {
      await client?.close();
      await nc?.close();
    }
  });

  afterAll(async () => {
    await bus?.close();
    await server?.close();
  });

  async function consumer(user: string): Promise<{ client: EventsClient; nc: NatsConnection }> {
    const nc = await connect({ servers: server.url, user, pass: user, timeout: 2_000 });
    const client = await connectEvents({ connection: nc, namespace, logger: eventsLogger });
    open.push({ client, nc });
    return { client, nc };
  }

  const breached = (budgetId: string): CloudEvent => ({
    specversion: '1.0',
    id: `evt_${budgetId}`,
    source: 'budgets',
    type,
    subject: budgetId,
    time: new Date().toISOString(),
    datacontenttype: 'application/json',
    data: encodePayload(
      messages.BudgetThresholdCrossedSchema,
      create(messages.BudgetThresholdCrossedSchema, { budgetId, threshold: 100, currency: 'EUR' }),
    ),
  });

  it('creates its durable, receives the stream history and acks, then updates the durable', async () => {
    await bus.publish(breached('bdg_before')); // the producer's stream exists; the durable does not yet
    const received: string[] = [];
    const { client } = await consumer('billing');
    await client.subscribe(type, {
      durable,
      handler: async (data) => void received.push(data.budgetId),
    });
    await bus.publish(breached('bdg_after'));
    await eventually(() => (received.length === 2 ? true : undefined));
    expect(received).toEqual(['bdg_before', 'bdg_after']);
    await client.close();

    // A restart with other settings brings the existing durable to them (the update path).
    const { client: restarted } = await consumer('billing');
    await restarted.subscribe(type, { durable, ackWaitMs: 45_000, handler: async () => {} });
    const platform = await connect({ servers: server.url });
    const jsm = await jetstreamManager(platform);
    const info = await jsm.consumers.info(`${namespace.toUpperCase()}_BUDGETS`, durable);
    expect(info.config.ack_wait).toBe(45_000 * 1_000_000);
    expect(info.num_ack_pending).toBe(0);
    expect(info.delivered.stream_seq).toBe(2);
    await platform.close();
    expect(logged).toEqual([]);
  });

  it('cannot subscribe without the right to create the durable (the list is not loose)', async () => {
    const { client } = await consumer('partial');
    await expect(
      client.subscribe(type, { durable: partialDurable, handler: async () => {} }),
    ).rejects.toThrow(/permission|timeout/i);
  });
});

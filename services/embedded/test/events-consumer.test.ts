import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  connectEvents,
  memoryInbox,
  withInbox,
  type EventType,
  type EventsClient,
  type PayloadOf,
  type ReceivedEvent,
} from '@costgov/events';
import { identity } from '@costgov/contracts';
import { createRpcClient } from '@costgov/rpc';
import { eventually, realInfra } from '@costgov/testing';
import type { RunningSystem } from '../src/system';
import { restCaller, startRestSystem } from './support/rest';
import { focusFile } from '@costgov/testing';

/**
 * Another team's service: only @costgov/events and the served AsyncAPI document. It subscribes to
 * budgets.budget.breached and scanner.scan.completed on real NATS while the system runs; the in-process
 * bus of the embedded default has no NATS to subscribe to.
 */
const bootstrapKey = 'cg_live_eventsconsumerbootstrapkey000000000';
const call = restCaller(() => system.url, bootstrapKey);
let system: RunningSystem;
let teamId: string;
let namespace: string;
let client: EventsClient;
let asyncApi: {
  channels: Record<string, { address: string; 'x-jetstream': { stream: string } }>;
};

type Received<T extends EventType> = { data: PayloadOf<T>; event: ReceivedEvent<T> };
const breaches: Received<'budgets.budget.breached'>[] = [];
const scans: Received<'scanner.scan.completed'>[] = [];

/** Where the document says events of `type` are: its channel's subject and stream, in our namespace. */
function documented(type: EventType) {
  const channel = asyncApi.channels[type]!;
  return {
    subject: channel.address.replace('{namespace}', namespace),
    stream: channel['x-jetstream'].stream.replace('{NAMESPACE}', namespace.toUpperCase()),
  };
}

describe.skipIf(!realInfra)('a consumer written with libs/events, end to end on NATS', () => {
  beforeAll(async () => {
    ({ system, teamId, namespace } = await startRestSystem(bootstrapKey));
    const served = await fetch(`${system.url}/v1/asyncapi.json`);
    expect(served.status).toBe(200);
    asyncApi = (await served.json()) as typeof asyncApi;

    client = await connectEvents({ servers: process.env.NATS_URL!, namespace, name: 'events-consumer-test' });
    const inbox = memoryInbox();
    await client.subscribe('budgets.budget.breached', {
      durable: 'billing-breaches',
      handler: withInbox(inbox, async (data, event) => void breaches.push({ data, event })),
    });
    await client.subscribe('scanner.scan.completed', {
      durable: 'billing-scans',
      handler: withInbox(inbox, async (data, event) => void scans.push({ data, event })),
    });
  });

  afterAll(async () => {
    await client?.close();
    await system?.stop();
  });

  it('receives budgets.budget.breached, decoded, when a FOCUS upload breaches a budget', async () => {
    const connection = await call('POST', '/v1/guard/connections', {
      body: { name: 'aws', provider: 'aws' },
    });
    expect(connection.status, connection.text).toBe(201);
    const project = await call('POST', '/v1/guard/projects', {
      body: { name: 'storefront', connection_ids: [connection.body.data.id] },
    });
    expect(project.status, project.text).toBe(201);
    const projectId = project.body.data.id as string;
    const budget = await call('POST', '/v1/guard/budgets', {
      body: {
        project_id: projectId,
        name: 'Storefront cloud',
        amount: 100,
        currency: 'USD',
        period: 'monthly',
      },
    });
    expect(budget.status, budget.text).toBe(201);
    const budgetId = budget.body.data.id as string;

    const upload = await fetch(`${system.url}/v1/guard/connections/${connection.body.data.id}/cost-data`, {
      method: 'POST',
      headers: { authorization: `Bearer ${bootstrapKey}`, 'content-type': 'text/csv' },
      body: focusFile([60.25, 48.25]),
    });
    expect(upload.status, await upload.clone().text()).toBe(200);

    const { data, event } = await eventually(() => breaches.find((b) => b.data.budgetId === budgetId));
    expect(data).toMatchObject({
      $typeName: 'costgov.events.v1.BudgetThresholdCrossed',
      budgetId,
      teamId,
      projectId,
      budgetName: 'Storefront cloud',
      projectName: 'storefront',
      threshold: 100,
      amount: 100,
      currency: 'USD',
      period: 'monthly',
    });
    expect(data.currentSpend).toBeCloseTo(108.5, 6);
    expect(data.percentageUsed).toBeCloseTo(108.5, 6);
    expect(event.attributes).toMatchObject({
      specversion: '1.0',
      type: 'budgets.budget.breached',
      source: 'budgets',
      subject: budgetId,
      id: expect.any(String),
    });
    expect(new Date(event.attributes.time).getTime()).not.toBeNaN();
    expect(event).toMatchObject({
      durable: 'billing-breaches',
      deliveryCount: 1,
      ...documented('budgets.budget.breached'),
    });
  });

  it('receives scanner.scan.completed, decoded, when a scan finishes', async () => {
    const identityPort = system.services.find((s) => s.name === 'identity')!.port;
    const identityClient = createRpcClient(identity.IdentityService, `127.0.0.1:${identityPort}`);
    try {
      await identityClient.grantScanCredits({ teamId, credits: 1n });
    } finally {
      identityClient.close();
    }
    const projectId = (await call('POST', '/v1/guard/projects', { body: { name: 'scanned' } })).body.data
      .id as string;
    const scan = await call('POST', '/v1/guard/scans', { body: { project_id: projectId } });
    expect(scan.status, scan.text).toBe(202);
    const scanId = scan.body.data.id as string;

    const { data, event } = await eventually(() => scans.find((s) => s.data.scanId === scanId));
    expect(data).toMatchObject({
      $typeName: 'costgov.events.v1.ScanFinished',
      scanId,
      teamId,
      projectId,
      status: 'completed',
      error: '',
    });
    expect(event.attributes).toMatchObject({
      type: 'scanner.scan.completed',
      source: 'scanner',
      subject: scanId,
    });
    expect(event).toMatchObject({ durable: 'billing-scans', ...documented('scanner.scan.completed') });
  });
});

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  freePort,
  natsServerBinary,
  startNatsServer,
  type NatsServer,
  captureLogger,
  eventually,
} from '@costgov/testing';
import type { CloudEvent } from '../src/cloudevent';
import { createNatsBus } from '../src/nats';
import { testEvent } from './support';

describe('NATS unreachable at start', () => {
  it('retries with a logged reason, then rejects with a clear message after the connect timeout', async () => {
    const port = await freePort(); // nothing listens there
    const { logger, lines } = captureLogger();
    const started = Date.now();
    const failed = createNatsBus({
      url: `nats://user:secret@127.0.0.1:${port}`,
      logger,
      connectTimeoutMs: 1_500,
    });
    await expect(failed).rejects.toThrow(
      new RegExp(`^Cannot connect to NATS at nats://127\\.0\\.0\\.1:${port} within 1500 ms .*: .+`),
    );
    const elapsed = Date.now() - started;
    expect(elapsed).toBeGreaterThanOrEqual(1_500);
    expect(elapsed).toBeLessThan(5_000);
    const retries = lines.filter((line) => line.msg === 'cannot connect to NATS; retrying');
    expect(retries.length).toBeGreaterThanOrEqual(2);
    expect(retries[0]).toMatchObject({ level: 'warn', attempt: 1, reason: expect.any(String) });
    expect(JSON.stringify(lines)).not.toContain('secret'); // credentials never reach a log line
    await expect(failed).rejects.not.toThrow(/secret/);
  });
});

describe.skipIf(!natsServerBinary())('NATS server killed and restarted (skipped without nats-server)', () => {
  let server: NatsServer;
  beforeAll(async () => {
    server = await startNatsServer();
  }, 30_000);
  afterAll(() => server?.close());

  it('connects once a server appears within the connect timeout', async () => {
    await server.kill();
    const { logger, lines } = captureLogger();
    const opening = createNatsBus({ url: server.url, namespace: 'late', logger, connectTimeoutMs: 20_000 });
    await eventually(() =>
      expect(lines.some((l) => l.msg === 'cannot connect to NATS; retrying')).toBe(true),
    );
    await server.start();
    const bus = await opening;
    await bus.publish(testEvent());
    await bus.close();
  }, 30_000);

  it('rides out kill -9 of the server: publishing and consuming resume, with the state changes logged', async () => {
    const { logger, lines } = captureLogger();
    const bus = await createNatsBus({ url: server.url, namespace: 'restart', logger });
    const received: CloudEvent[] = [];
    const consumer = await bus.consume({
      durable: 'restart-test',
      types: ['budgets.project.deleted'],
      handler: async (event) => void received.push(event),
    });
    const before = testEvent();
    await bus.publish(before);
    await eventually(() => expect(received.map((e) => e.id)).toContain(before.id));

    await server.kill();
    await eventually(() => expect(lines.some((l) => l.msg === 'NATS disconnected; reconnecting')).toBe(true));
    await server.start();
    await eventually(() => expect(lines.some((l) => l.msg === 'NATS reconnected')).toBe(true), 10_000);

    // The relay retries a failed publish on its next poll; so does this loop.
    const after = testEvent();
    await eventually(() => bus.publish(after).then(() => after), 10_000);
    await eventually(() => expect(received.map((e) => e.id)).toContain(after.id), 15_000);
    await consumer.stop();
    await bus.close();
  }, 60_000);
});

import { SpanKind, trace } from '@opentelemetry/api';
import pino from 'pino';
import { UnavailableError } from '@costgov/errors';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { captureLogger, eventually, type LogLine } from '@costgov/testing';
import type { Bus, ConsumeOptions, Consumer, DeliveryInfo } from '../src/bus';
import type { CloudEvent } from '../src/cloudevent';
import { busImplementations, recordSpans, testEvent, type BusUnderTest } from './support';

const spans = recordSpans();

describe.each(busImplementations)('$name bus', (implementation) => {
  let testBus: BusUnderTest;
  let bus: Bus;
  let logLines: LogLine[];
  const consumers: Consumer[] = [];

  beforeEach(async () => {
    const { logger, lines } = captureLogger();
    logLines = lines;
    testBus = await implementation.open(logger);
    bus = testBus.bus;
  });
  afterEach(async () => {
    await Promise.all(consumers.splice(0).map((consumer) => consumer.stop()));
    await testBus.close();
  });

  /** Starts a consumer that records what it receives; `fail` decides per delivery whether to throw. */
  async function record(
    options: Partial<ConsumeOptions> & { fail?: (event: CloudEvent, info: DeliveryInfo) => boolean } = {},
  ) {
    const received: Array<{ event: CloudEvent; info: DeliveryInfo }> = [];
    const { fail, ...rest } = options;
    const consumer = await bus.consume({
      durable: 'recorder',
      types: ['budgets.>'],
      backoffMs: 10,
      ...rest,
      handler: async (event, info) => {
        received.push({ event, info });
        if (fail?.(event, info)) throw new Error(`handler failed on delivery ${info.deliveryCount}`);
      },
    });
    consumers.push(consumer);
    return { received, ids: () => received.map((r) => r.event.id), consumer };
  }

  describe('publish and consume', () => {
    it('delivers the envelope unchanged and continues the publisher trace in a consumer span', async () => {
      const { received } = await record();
      const event = testEvent({
        subject: 'prj_1',
        data: { projectId: 'prj_1', nested: { list: [1, 'two', null] } },
      });
      const requestTrace = await trace.getTracer('test').startActiveSpan('request', async (span) => {
        await bus.publish(event);
        span.end();
        return span.spanContext().traceId;
      });

      await eventually(() => expect(received).toHaveLength(1));
      const delivered = received[0]!;
      expect(delivered.info).toEqual({ deliveryCount: 1, working: expect.any(Function) });
      const { traceparent, ...envelope } = delivered.event;
      expect(envelope).toEqual(event);
      expect(traceparent).toMatch(new RegExp(`^00-${requestTrace}-[0-9a-f]{16}-01$`));

      const consume = await eventually(() => {
        const span = spans
          .getFinishedSpans()
          .find(
            (s) => s.name === 'consume budgets.project.deleted' && s.spanContext().traceId === requestTrace,
          );
        expect(span).toBeDefined();
        return span!;
      });
      const publish = spans
        .getFinishedSpans()
        .find((s) => s.spanContext().spanId === consume.parentSpanContext?.spanId);
      expect(consume.kind).toBe(SpanKind.CONSUMER);
      expect(publish?.name).toBe('publish budgets.project.deleted');
      expect(publish?.kind).toBe(SpanKind.PRODUCER);
    });

    it('delivers only the types asked for, across services and with wildcards', async () => {
      const { received } = await record({ types: ['budgets.project.*', 'scanner.scan.completed'] });
      const wanted = [
        testEvent({ type: 'budgets.project.deleted' }),
        testEvent({ type: 'scanner.scan.completed', source: 'scanner' }),
      ];
      const unwanted = [
        testEvent({ type: 'budgets.budget.breached' }),
        testEvent({ type: 'scanner.scan.failed', source: 'scanner' }),
      ];
      for (const event of [unwanted[0]!, wanted[0]!, unwanted[1]!, wanted[1]!]) await bus.publish(event);
      const last = testEvent({ type: 'budgets.project.created' });
      await bus.publish(last);

      // Each service's events come in order, but the two services' streams are independent: wait for the
      // last wanted event of each. An unwanted one, published before it on the same stream, was passed by.
      await eventually(() =>
        expect(received.map((r) => r.event.id)).toEqual(expect.arrayContaining([wanted[1]!.id, last.id])),
      );
      expect(received.map((r) => r.event.id).sort()).toEqual([...wanted, last].map((e) => e.id).sort());
    });

    it("delivers outside the publisher's call stack", async () => {
      let published = false;
      const seenAfterPublish: boolean[] = [];
      consumers.push(
        await bus.consume({
          durable: 'async',
          types: ['budgets.>'],
          handler: async () => void seenAfterPublish.push(published),
        }),
      );
      const publishing = bus.publish(testEvent());
      published = true; // runs before any handler unless publish delivered synchronously
      await publishing;
      await eventually(() => expect(seenAfterPublish).toEqual([true]));
    });

    it('refuses malformed types and options with a message naming them', async () => {
      await expect(bus.publish(testEvent({ type: 'Budgets.project deleted' }))).rejects.toThrow(
        /Invalid event type 'Budgets.project deleted'/,
      );
      await expect(
        bus.consume({ durable: 'x', types: ['*.project.deleted'], handler: async () => {} }),
      ).rejects.toThrow(/literal service token/);
      await expect(
        bus.consume({ durable: 'a.b', types: ['budgets.>'], handler: async () => {} }),
      ).rejects.toThrow(/Invalid durable name 'a.b'/);
    });
  });

  describe('redelivery', () => {
    it('redelivers after a handler failure until it succeeds, counting deliveries', async () => {
      const { received } = await record({ fail: (_, info) => info.deliveryCount < 3 });
      const event = testEvent();
      await bus.publish(event);
      await eventually(() => expect(received.map((r) => r.info.deliveryCount)).toEqual([1, 2, 3]));
      expect(received.every((r) => r.event.id === event.id)).toBe(true);
      expect(logLines.filter((line) => line.msg.includes('redelivering'))).toHaveLength(2);
    });

    it('terminates the message after maxDeliver, logs it at error, and goes on with the next', async () => {
      const poison = testEvent();
      const { received, ids } = await record({ maxDeliver: 2, fail: (event) => event.id === poison.id });
      await bus.publish(poison);
      await eventually(() =>
        expect(logLines.some((line) => line.level === 'error' && line.event_id === poison.id)).toBe(true),
      );

      const next = testEvent();
      await bus.publish(next);
      await eventually(() => expect(ids()).toContain(next.id));
      // A third delivery would follow the second after ~20 ms of backoff; give it three times that.
      await new Promise((resolve) => setTimeout(resolve, 60));
      expect(received.filter((r) => r.event.id === poison.id).map((r) => r.info.deliveryCount)).toEqual([
        1, 2,
      ]);
    });

    it.each([
      ['UnavailableError', () => new UnavailableError()],
      [
        'a database that went away',
        () => Object.assign(new Error('terminating connection'), { code: '57P01' }),
      ],
      ['a gRPC UNAVAILABLE', () => Object.assign(new Error('14 UNAVAILABLE: No connection'), { code: 14 })],
    ])('keeps redelivering past maxDeliver while %s, then handles the message', async (_, outage) => {
      const received: number[] = [];
      consumers.push(
        await bus.consume({
          durable: 'outage',
          types: ['budgets.>'],
          backoffMs: 5,
          maxDeliver: 2,
          handler: async (_event, info) => {
            received.push(info.deliveryCount);
            if (info.deliveryCount < 5) throw outage();
          },
        }),
      );
      await bus.publish(testEvent());
      await eventually(() => expect(received).toEqual([1, 2, 3, 4, 5]));
      expect(logLines.filter((line) => line.level === 'error')).toEqual([]);
    });

    it.each([
      ['undefined', undefined],
      ['null', null],
      ['a string', 'plain string'],
      ['an object', { reason: 'no message' }],
      ['an object without a text form', Object.create(null) as object],
    ])('survives a handler that throws %s: redelivers, terminates, goes on', async (_, thrown) => {
      const poison = testEvent();
      const seen: Array<[string, number]> = [];
      consumers.push(
        await bus.consume({
          durable: 'odd-throws',
          types: ['budgets.>'],
          backoffMs: 10,
          maxDeliver: 2,
          handler: async (event, info) => {
            seen.push([event.id, info.deliveryCount]);
            if (event.id === poison.id) throw thrown;
          },
        }),
      );
      await bus.publish(poison);
      await eventually(() =>
        expect(logLines.some((line) => line.level === 'error' && line.event_id === poison.id)).toBe(true),
      );
      const next = testEvent();
      await bus.publish(next);
      await eventually(() => expect(seen).toContainEqual([next.id, 1]));
      expect(seen.filter(([id]) => id === poison.id).map(([, count]) => count)).toEqual([1, 2]);
    });

    it('redelivers and goes on when logging the failure throws too', async () => {
      // A serializer that throws, as one can on an exotic thrown value: logging is not allowed to lose the message.
      const brokenLogger = pino(
        {
          level: 'debug',
          serializers: {
            err: () => {
              throw new Error('serializer broke');
            },
          },
        },
        { write: () => undefined },
      );
      const broken = await implementation.open(brokenLogger);
      try {
        const seen: number[] = [];
        const failing = testEvent();
        const consumer = await broken.bus.consume({
          durable: 'broken-logs',
          types: ['budgets.>'],
          backoffMs: 10,
          handler: async (event, info) => {
            seen.push(info.deliveryCount);
            // Only the first event fails (once): the next one must then arrive exactly once.
            if (event.id === failing.id && info.deliveryCount === 1) throw new Error('first delivery fails');
          },
        });
        await broken.bus.publish(failing);
        await eventually(() => expect(seen).toEqual([1, 2]));
        const next = testEvent();
        await broken.bus.publish(next);
        await eventually(() => expect(seen).toEqual([1, 2, 1]));
        await consumer.stop();
      } finally {
        await broken.close();
      }
    });

    it('redelivers a message whose handler outlives the ack wait', async () => {
      const counts: number[] = [];
      let release: () => void = () => {};
      const firstHandlerDone = new Promise<void>((resolve) => (release = resolve));
      consumers.push(
        await bus.consume({
          durable: 'slow',
          types: ['budgets.>'],
          ackWaitMs: 300,
          concurrency: 2,
          handler: async (_, info) => {
            counts.push(info.deliveryCount);
            if (info.deliveryCount === 1) await firstHandlerDone; // hangs past the ack wait
          },
        }),
      );
      await bus.publish(testEvent());
      await eventually(() => expect(counts).toEqual([1, 2]));
      release();
    });
  });

  describe('dedupe', () => {
    it('drops a second publish of the same event id', async () => {
      const { ids } = await record();
      const event = testEvent();
      await bus.publish(event);
      await bus.publish({ ...event, data: { changed: true } });
      const marker = testEvent();
      await bus.publish(marker);
      // One consumer handling one message at a time sees messages in order: the marker comes last.
      await eventually(() => expect(ids()).toEqual([event.id, marker.id]));
    });

    it('delivers a deliberate re-send under another dedupe id', async () => {
      const { ids } = await record();
      const event = testEvent();
      await bus.publish(event);
      await bus.publish(event, { dedupeId: `${event.id}-replay` });
      await eventually(() => expect(ids()).toEqual([event.id, event.id]));
    });
  });

  describe('durables', () => {
    it('gives a durable created after publishing every earlier message, in order', async () => {
      const events = [testEvent(), testEvent(), testEvent()];
      for (const event of events) await bus.publish(event);
      const { ids } = await record({ durable: 'latecomer' });
      await eventually(() => expect(ids()).toEqual(events.map((e) => e.id)));
    });

    it("starts a 'new' durable at the next message, and every such durable gets every message", async () => {
      const earlier = testEvent();
      await bus.publish(earlier);
      const replicaA = await record({ durable: 'replica_a', startFrom: 'new', expireWhenIdleMs: 60_000 });
      const replicaB = await record({ durable: 'replica_b', startFrom: 'new', expireWhenIdleMs: 60_000 });
      const later = testEvent();
      await bus.publish(later);
      await eventually(() => expect(replicaA.ids()).toEqual([later.id]));
      await eventually(() => expect(replicaB.ids()).toEqual([later.id]));
    });

    it('resumes after stop without redelivering what was acked', async () => {
      const first = await record();
      const before = testEvent();
      await bus.publish(before);
      await eventually(() => expect(first.ids()).toEqual([before.id]));
      await first.consumer.stop();

      const after = testEvent();
      await bus.publish(after);
      const second = await record();
      await eventually(() => expect(second.ids()).toEqual([after.id]));
      expect(first.ids()).toEqual([before.id]);
    });

    it('stop() waits for the handlers running now and takes no more messages', async () => {
      let release: () => void = () => {};
      const gate = new Promise<void>((resolve) => (release = resolve));
      const { ids } = await record({ durable: 'stopping' });
      const started: string[] = [];
      const slow = await bus.consume({
        durable: 'stopping-slow',
        types: ['budgets.>'],
        handler: async (event) => {
          started.push(event.id);
          await gate;
        },
      });
      const first = testEvent();
      await bus.publish(first);
      await eventually(() => expect(started).toEqual([first.id]));

      let stopped = false;
      const stopping = slow.stop().then(() => (stopped = true));
      await eventually(() => expect(ids()).toEqual([first.id])); // the other durable is unaffected
      expect(stopped).toBe(false);
      release();
      await stopping;

      await bus.publish(testEvent());
      await eventually(() => expect(ids()).toHaveLength(2));
      expect(started).toEqual([first.id]);
    });

    it('hands messages taken but not started back at stop, without waiting for the ack wait', async () => {
      let release: () => void = () => {};
      const gate = new Promise<void>((resolve) => (release = resolve));
      let started = 0;
      const first = await bus.consume({
        durable: 'handover',
        types: ['budgets.>'],
        handler: () => (started++, gate),
      });
      const events = [testEvent(), testEvent(), testEvent()];
      for (const event of events) await bus.publish(event);
      await eventually(() => expect(started).toBe(1));
      const stopping = first.stop();
      release();
      await stopping;

      const { ids } = await record({ durable: 'handover' });
      await eventually(() => expect(ids()).toEqual(events.slice(1).map((e) => e.id)));
    });

    it('splits one durable between competing consumers, each message handled once', async () => {
      const handledBy: Record<string, string[]> = { a: [], b: [] };
      for (const name of ['a', 'b'] as const) {
        consumers.push(
          await bus.consume({
            durable: 'shared',
            types: ['budgets.>'],
            handler: async (event) => {
              handledBy[name]!.push(event.id);
              await new Promise((resolve) => setTimeout(resolve, 5)); // keep one busy so the other gets work
            },
          }),
        );
      }
      const events = Array.from({ length: 20 }, () => testEvent());
      for (const event of events) await bus.publish(event);

      await eventually(() =>
        expect(handledBy.a!.length + handledBy.b!.length).toBeGreaterThanOrEqual(events.length),
      );
      const all = [...handledBy.a!, ...handledBy.b!];
      expect(all.sort()).toEqual(events.map((e) => e.id).sort());
      expect(handledBy.a!.length).toBeGreaterThan(0);
      expect(handledBy.b!.length).toBeGreaterThan(0);
    });

    it('runs up to `concurrency` handlers at once', async () => {
      let running = 0;
      let peak = 0;
      let done = 0;
      // Handlers wait for the gate rather than a fixed 20 ms, which a slow publish on a loaded machine could
      // outlast, so that three are really running at once however slowly the messages come.
      let open!: () => void;
      const gate = new Promise<void>((resolve) => (open = resolve));
      consumers.push(
        await bus.consume({
          durable: 'parallel',
          types: ['budgets.>'],
          concurrency: 3,
          handler: async () => {
            peak = Math.max(peak, ++running);
            await gate;
            running--;
            done++;
          },
        }),
      );
      try {
        for (let i = 0; i < 9; i++) await bus.publish(testEvent());
        await eventually(() => expect(running).toBe(3));
        await new Promise((resolve) => setTimeout(resolve, 50)); // a fourth would have started by now
        expect(peak).toBe(3);
      } finally {
        open(); // on a failure too, or stopping the consumer would wait for handlers that never end
      }
      await eventually(() => expect(done).toBe(9));
      expect(peak).toBe(3);
    });
  });
});

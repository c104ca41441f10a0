import { context, propagation, trace } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { W3CTraceContextPropagator } from '@opentelemetry/core';
import {
  BasicTracerProvider,
  InMemorySpanExporter,
  SimpleSpanProcessor,
} from '@opentelemetry/sdk-trace-base';
import type { Logger } from '@costgov/log';
import { deleteStreams, uniqueName } from '@costgov/testing';
import type { Bus, BusObserver } from '../src/bus';
import type { CloudEvent } from '../src/cloudevent';
import { createMemoryBus } from '../src/memory';
import { createNatsBus } from '../src/nats';

/** What the bus's own tests share; the kit's (@costgov/testing) serves every package. */

export interface BusUnderTest {
  bus: Bus;
  namespace: string;
  /** Closes the bus and deletes what it left on the broker. */
  close(): Promise<void>;
}

export interface BusImplementation {
  name: 'memory' | 'nats';
  open(logger: Logger, options?: { observer?: BusObserver }): Promise<BusUnderTest>;
}

export const natsUrl = process.env.NATS_URL;

const memory: BusImplementation = {
  name: 'memory',
  async open(logger, options) {
    const bus = createMemoryBus({ logger, observer: options?.observer });
    return { bus, namespace: 'costgov', close: () => bus.close() };
  },
};

const nats = (url: string): BusImplementation => ({
  name: 'nats',
  async open(logger, options) {
    // A namespace per test: runs never see each other's streams, durables or dedupe windows.
    const namespace = uniqueName('t');
    const bus = await createNatsBus({ url, namespace, logger, observer: options?.observer });
    return {
      bus,
      namespace,
      async close() {
        await bus.close();
        await deleteStreams(url, namespace);
      },
    };
  },
});

/** The in-process bus always; NATS JetStream too when NATS_URL is set. */
export const busImplementations: BusImplementation[] = natsUrl ? [memory, nats(natsUrl)] : [memory];

let spans: InMemorySpanExporter | undefined;

/** Registers a real tracer, W3C propagation and async context once per test file; returns the finished spans. */
export function recordSpans(): InMemorySpanExporter {
  if (!spans) {
    spans = new InMemorySpanExporter();
    context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
    propagation.setGlobalPropagator(new W3CTraceContextPropagator());
    trace.setGlobalTracerProvider(
      new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(spans)] }),
    );
  }
  return spans;
}

let counter = 0;

export function testEvent(overrides: Partial<CloudEvent> = {}): CloudEvent {
  counter++;
  return {
    specversion: '1.0',
    id: `evt_test_${Date.now()}_${counter}`,
    source: 'budgets',
    type: 'budgets.project.deleted',
    subject: `prj_${counter}`,
    time: new Date().toISOString(),
    datacontenttype: 'application/json',
    data: { projectId: `prj_${counter}`, n: counter },
    ...overrides,
  };
}

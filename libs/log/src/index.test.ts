import { Writable } from 'node:stream';
import { context, propagation, ROOT_CONTEXT, trace, TraceFlags } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { W3CTraceContextPropagator } from '@opentelemetry/core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  addLogContext,
  createLogger,
  errorFields,
  injectTrace,
  serviceLogger,
  withIncomingTrace,
  withLogContext,
} from './index';

describe('log lines', () => {
  it('keep of an error only its type, message, code and stack', () => {
    const error = Object.assign(new Error('duplicate key'), {
      code: '23505',
      detail: 'Key (user_name)=(ada@example.com) already exists.',
      parameters: ['secret-hash'],
    });
    const fields = errorFields(error);
    expect(fields).toMatchObject({ type: 'Error', message: 'duplicate key', code: '23505' });
    expect(JSON.stringify(fields)).not.toMatch(/ada@example.com|secret-hash/);
  });

  it('describe anything thrown, even an object without a prototype, without throwing', () => {
    expect(errorFields(Object.create(null))).toEqual({ message: '[object Object]' });
    expect(errorFields('plain text')).toEqual({ message: 'plain text' });
    expect(errorFields(undefined)).toEqual({ message: 'undefined' });
  });

  it('carry the request id of the context they are written in', () => {
    const lines: string[] = [];
    const sink = new Writable({ write: (chunk, _enc, done) => (lines.push(chunk.toString()), done()) });
    const logger = createLogger('test', 'info', sink);
    withLogContext({ requestId: 'req_abc' }, () => logger.info('hello'));
    expect(JSON.parse(lines[0]!)).toMatchObject({ request_id: 'req_abc', msg: 'hello' });
  });
});

/** The top-level keys of a JSON object text in order, repeats included (JSON.parse keeps only the last). */
function topLevelKeys(line: string): string[] {
  const keys: string[] = [];
  let depth = 0;
  for (let i = 0; i < line.length; i++) {
    const c = line[i];
    if (c === '"') {
      let end = i + 1;
      while (line[end] !== '"') end += line[end] === '\\' ? 2 : 1;
      if (depth === 1 && line[end + 1] === ':') keys.push(JSON.parse(line.slice(i, end + 1)) as string);
      i = end;
    } else if (c === '{' || c === '[') depth++;
    else if (c === '}' || c === ']') depth--;
  }
  return keys;
}

const duplicates = (keys: string[]) => keys.filter((key, i) => keys.indexOf(key) !== i);

describe('log lines for strict JSON parsers', () => {
  const capture = () => {
    const lines: string[] = [];
    const sink = new Writable({ write: (chunk, _enc, done) => (lines.push(chunk.toString()), done()) });
    return { lines, sink };
  };

  it('name their service once when a service runs under a process logger of another name', () => {
    const { lines, sink } = capture();
    const processLogger = createLogger('costgov', 'info', sink);
    const logger = serviceLogger(processLogger.child({ component: 'x' }), 'identity');
    logger.info('started');
    expect(JSON.parse(lines[0]!)).toMatchObject({ service: 'identity', name: 'identity', component: 'x' });
    expect(duplicates(topLevelKeys(lines[0]!))).toEqual([]);
  });

  it('keep the logger as it is when it already names that service', () => {
    const logger = createLogger('budgets', 'info', capture().sink);
    expect(serviceLogger(logger, 'budgets')).toBe(logger);
  });

  it('carry a context field once when a child binds it too', () => {
    const { lines, sink } = capture();
    const logger = createLogger('gateway', 'info', sink).child({ request_id: 'req_bound' });
    withLogContext({ requestId: 'req_context', teamId: 'team_1' }, () => logger.info('hello'));
    expect(duplicates(topLevelKeys(lines[0]!))).toEqual([]);
    expect(JSON.parse(lines[0]!)).toMatchObject({ request_id: 'req_bound', team_id: 'team_1' });
  });

  it('finds a repeated key (the check above can fail)', () => {
    expect(duplicates(topLevelKeys('{"service":"a","x":{"service":1},"service":"b"}'))).toEqual(['service']);
  });
});

describe('the log context of a request', () => {
  it('takes fields added in place by a later step, and only inside its context', () => {
    const lines: string[] = [];
    const sink = new Writable({ write: (chunk, _enc, done) => (lines.push(chunk.toString()), done()) });
    const logger = createLogger('gateway', 'info', sink);
    addLogContext({ teamId: 'team_outside' }); // no context: nothing to add to
    withLogContext({ requestId: 'req_inplace' }, () => {
      addLogContext({ teamId: 'team_1' });
      logger.info('inside');
    });
    logger.info('outside');
    expect(JSON.parse(lines[0]!)).toMatchObject({ request_id: 'req_inplace', team_id: 'team_1' });
    expect(JSON.parse(lines[1]!)).not.toHaveProperty('team_id');
  });
});

describe('the trace context of a request without instrumentation', () => {
  // What the SDK registers when no exporter is configured: context and W3C propagation, no tracer.
  beforeAll(() => {
    context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
    propagation.setGlobalPropagator(new W3CTraceContextPropagator());
  });
  afterAll(() => {
    context.disable();
    propagation.disable();
  });

  const traceId = '0af7651916cd43dd8448eb211c80319c';
  const traceparent = `00-${traceId}-b7ad6b7169203331-01`;
  const capture = () => {
    const lines: Record<string, unknown>[] = [];
    const sink = new Writable({
      write: (chunk, _enc, done) => (lines.push(JSON.parse(chunk.toString()) as never), done()),
    });
    return { lines, logger: createLogger('gateway', 'info', sink) };
  };
  const outgoing = () => {
    const carrier: Record<string, string> = {};
    injectTrace(carrier, { set: (c, key, value) => (c[key] = value) });
    return carrier;
  };

  it('continues an incoming traceparent: lines carry its trace id and calls made inside pass it on', async () => {
    const { lines, logger } = capture();
    const carried = await withIncomingTrace({ traceparent }, async () => {
      await new Promise((resolve) => setTimeout(resolve, 1));
      logger.info('hello');
      return outgoing();
    });
    expect(lines[0]).toMatchObject({ trace_id: traceId, span_id: 'b7ad6b7169203331' });
    expect(carried.traceparent).toBe(traceparent);
    expect(outgoing()).toEqual({}); // nothing leaks outside the request
  });

  it('starts a trace of its own when none comes, a new one per request', () => {
    const { lines, logger } = capture();
    const carried = [1, 2].map(() =>
      withIncomingTrace({ 'x-other': 'header' }, () => (logger.info('hello'), outgoing())),
    );
    expect(lines[0]!.trace_id).toMatch(/^[0-9a-f]{32}$/);
    expect(lines[0]!.span_id).toMatch(/^[0-9a-f]{16}$/);
    expect(lines[1]!.trace_id).not.toBe(lines[0]!.trace_id);
    expect(carried[0]!.traceparent).toBe(
      `00-${lines[0]!.trace_id as string}-${lines[0]!.span_id as string}-00`,
    );
  });

  it('leaves the span an instrumentation made active as it is', () => {
    const active = {
      traceId: 'ffffffffffffffffffffffffffffffff',
      spanId: 'ffffffffffffffff',
      traceFlags: TraceFlags.SAMPLED,
    };
    const seen = context.with(trace.setSpanContext(ROOT_CONTEXT, active), () =>
      withIncomingTrace({ traceparent }, () => trace.getActiveSpan()?.spanContext().traceId),
    );
    expect(seen).toBe(active.traceId);
  });
});

import { AsyncLocalStorage } from 'node:async_hooks';
import {
  context,
  defaultTextMapGetter,
  propagation,
  ROOT_CONTEXT,
  trace,
  TraceFlags,
  type TextMapGetter,
  type TextMapSetter,
} from '@opentelemetry/api';
import pino, { type Logger } from 'pino';

export type { Logger };

/** Request-scoped values that every log line carries. */
export interface LogContext {
  requestId?: string;
  teamId?: string;
}

export const logContext = new AsyncLocalStorage<LogContext>();

export function withLogContext<T>(fields: LogContext, fn: () => T): T {
  return logContext.run({ ...logContext.getStore(), ...fields }, fn);
}

/**
 * Adds fields to the innermost log context in place (a request learns its team after it began), rather
 * than a nested `withLogContext` per step: one context per request is cheaper on the hot path.
 * Outside any context it does nothing.
 */
export function addLogContext(fields: LogContext): void {
  const store = logContext.getStore();
  if (store) Object.assign(store, fields);
}

/**
 * `hexDigits` (a multiple of 8) random hex digits, for the ids of a trace that records nothing: from
 * Math.random as the OpenTelemetry SDK makes them; crypto's randomFillSync cost 2 % of the gateway's CPU.
 */
function randomHex(hexDigits: number): string {
  let hex = '';
  for (let i = 0; i < hexDigits; i += 8)
    hex += ((Math.random() * 0x1_0000_0000) >>> 0).toString(16).padStart(8, '0');
  return hex;
}

/**
 * Runs `fn` in the W3C trace context `carrier` (HTTP headers, by default) holds, or in a new trace
 * when it holds none, unless an instrumentation already made a span active. Without an exporter no
 * instrumentation is installed (libs/telemetry's tracing.ts), and this is what still puts trace ids in
 * log lines and passes them on to gRPC calls and events. The context is not a span: nothing is recorded.
 */
export function withIncomingTrace<C, T>(
  carrier: C,
  fn: () => T,
  getter: TextMapGetter<C> = defaultTextMapGetter,
): T {
  if (trace.getSpan(context.active())) return fn();
  let incoming = propagation.extract(ROOT_CONTEXT, carrier, getter);
  if (!trace.getSpanContext(incoming)) {
    incoming = trace.setSpanContext(incoming, {
      traceId: randomHex(32),
      spanId: randomHex(16),
      traceFlags: TraceFlags.NONE,
    });
  }
  return context.with(incoming, fn);
}

/** Writes the active trace context into `carrier` as W3C headers (nothing when there is none). */
export function injectTrace<C>(carrier: C, setter: TextMapSetter<C>): void {
  propagation.inject(context.active(), carrier, setter);
}

/** The active span's trace and span ids, when there is a recorded trace. */
export function activeTraceIds(): { trace_id: string; span_id: string } | undefined {
  const span = trace.getActiveSpan()?.spanContext();
  if (!span || span.traceId === '00000000000000000000000000000000') return undefined;
  return { trace_id: span.traceId, span_id: span.spanId };
}

/** The bound fields of a logger as pino keeps them, serialised (`,"service":"x","request_id":"y"`). */
const boundFieldsOf = (logger: unknown): string =>
  ((logger as Record<symbol, unknown>)[pino.symbols.chindingsSym] as string | undefined) ?? '';

/**
 * A JSON logger whose lines carry the active trace and span ids and the request id. No key appears twice
 * in a line (strict JSON parsers reject duplicates): context fields a child already binds are left out.
 */
export function createLogger(
  service: string,
  level: string = process.env.LOG_LEVEL ?? 'info',
  destination?: pino.DestinationStream,
): Logger {
  const options: pino.LoggerOptions = {
    name: service,
    level,
    base: { service },
    timestamp: pino.stdTimeFunctions.isoTime,
    serializers: { err: errorFields },
    formatters: { level: (label) => ({ level: label }) },
    mixin(_merge, _level, logger) {
      const fields: Record<string, string> = {};
      const store = logContext.getStore();
      if (store?.requestId) fields.request_id = store.requestId;
      if (store?.teamId) fields.team_id = store.teamId;
      Object.assign(fields, activeTraceIds());
      const bound = boundFieldsOf(logger);
      if (bound) for (const key of Object.keys(fields)) if (bound.includes(`"${key}":`)) delete fields[key];
      return fields;
    },
  };
  return destination ? pino(options, destination) : pino(options);
}

/**
 * The logger of one service inside a process whose logger names another (the embedded default runs every
 * service under `costgov`): the same destination, level and bound fields, with `service` and `name`
 * replaced rather than repeated, as `child({service})` would.
 */
export function serviceLogger(logger: Logger, service: string): Logger {
  const { service: current, name: _name, pid: _pid, hostname: _hostname, ...bound } = logger.bindings();
  if (current === service) return logger;
  const stream = (logger as unknown as Record<symbol, pino.DestinationStream>)[pino.symbols.streamSym];
  const root = createLogger(service, logger.level, stream);
  return Object.keys(bound).length > 0 ? root.child(bound) : root;
}

/**
 * What a log line keeps of an error: its kind, message, code and stack. Database and client errors carry
 * more (query parameters, row values, connection strings) that must not reach the logs.
 */
export function errorFields(error: unknown): Record<string, unknown> {
  if (!(error instanceof Error)) {
    try {
      return { message: String(error) };
    } catch {
      return { message: Object.prototype.toString.call(error) }; // e.g. an object without a prototype
    }
  }
  const { code } = error as { code?: unknown };
  return {
    type: error.name,
    message: error.message,
    ...(typeof code === 'string' || typeof code === 'number' ? { code } : {}),
    stack: error.stack,
  };
}

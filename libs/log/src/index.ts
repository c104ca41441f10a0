import { AsyncLocalStorage } from 'node:async_hooks';
import { trace } from '@opentelemetry/api';
import pino, { type Logger } from 'pino';

export type { Logger };

/** Request-scoped values that every log line carries. */
export interface LogContext {
  requestId?: string;
  teamId?: string;
}

export const logContext = new AsyncLocalStorage<LogContext>();

export function withLogContext<T>(context: LogContext, fn: () => T): T {
  return logContext.run({ ...logContext.getStore(), ...context }, fn);
}

/** A JSON logger whose lines carry the active trace and span ids and the request id. */
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
    mixin() {
      const fields: Record<string, string> = {};
      const store = logContext.getStore();
      if (store?.requestId) fields.request_id = store.requestId;
      if (store?.teamId) fields.team_id = store.teamId;
      const span = trace.getActiveSpan()?.spanContext();
      if (span && span.traceId !== '00000000000000000000000000000000') {
        fields.trace_id = span.traceId;
        fields.span_id = span.spanId;
      }
      return fields;
    },
  };
  return destination ? pino(options, destination) : pino(options);
}

/**
 * What a log line keeps of an error: its kind, message, code and stack. Database and client errors carry
 * more (query parameters, row values, connection strings) that must not reach the logs.
 */
export function errorFields(error: unknown): Record<string, unknown> {
  if (!(error instanceof Error)) return { message: String(error) };
  const { code } = error as { code?: unknown };
  return {
    type: error.name,
    message: error.message,
    ...(typeof code === 'string' || typeof code === 'number' ? { code } : {}),
    stack: error.stack,
  };
}

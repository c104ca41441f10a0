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
export function createLogger(service: string, level: string = process.env.LOG_LEVEL ?? 'info'): Logger {
  return pino({
    name: service,
    level,
    base: { service },
    timestamp: pino.stdTimeFunctions.isoTime,
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
  });
}

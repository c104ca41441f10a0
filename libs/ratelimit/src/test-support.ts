import pino from 'pino';
import type { Logger } from '@costgov/log';
export { startRedisServer, type RedisServer } from '@costgov/testing';

/** Test helpers shared by the limiter's test files; not exported from the package. */

export interface LogLine {
  level: string;
  msg: string;
}

export function captureLogger(): { logger: Logger; lines: LogLine[] } {
  const lines: LogLine[] = [];
  const logger = pino(
    { level: 'debug', formatters: { level: (label) => ({ level: label }) } },
    { write: (line: string) => lines.push(JSON.parse(line) as LogLine) },
  );
  return { logger, lines };
}

/** Milliseconds for a promise to settle, with its value. */
export async function timed<T>(work: () => Promise<T>): Promise<{ value: T; ms: number }> {
  const started = performance.now();
  const value = await work();
  return { value, ms: performance.now() - started };
}

import { createLogger, type Logger } from '@costgov/log';

/**
 * The logger to hand code under test: silent, unless TEST_LOG names a level (`TEST_LOG=debug npx vitest
 * run <file>`) to read what the code did while a test failed.
 */
export function testLogger(name = 'test'): Logger {
  return createLogger(name, process.env.TEST_LOG || 'silent');
}

/** One line a captureLogger kept: its level by name, its message and every other field. */
export interface LogLine {
  level: string;
  msg: string;
  [field: string]: unknown;
}

/**
 * A logger that keeps its lines (debug and up, or from `level`) for assertions, written as the services
 * write them (@costgov/log: level names, error fields, trace and request ids).
 */
export function captureLogger(options: { name?: string; level?: string } = {}): {
  logger: Logger;
  lines: LogLine[];
} {
  const lines: LogLine[] = [];
  const logger = createLogger(options.name ?? 'test', options.level ?? 'debug', {
    write: (line: string) => void lines.push(JSON.parse(line) as LogLine),
  });
  return { logger, lines };
}

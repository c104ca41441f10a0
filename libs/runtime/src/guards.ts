import type { Logger } from '@costgov/log';
import { countUncaughtError } from '@costgov/telemetry';

export type UncaughtKind = 'uncaught_exception' | 'unhandled_rejection';

export interface ProcessGuardDeps {
  /** Counts each error that reached the guard; defaults to process_uncaught_errors_total{kind}. */
  count?: (kind: UncaughtKind) => void;
  process?: NodeJS.Process;
}

/**
 * The last line of defence: an error that escaped every handler (a bug, or a library throwing from an
 * event) is logged as JSON and counted, and the process lives on. Node's default, exiting, would turn one
 * bad request into an outage of every request the process serves; the counter lets an alert decide
 * whether a restart is due. Returns a function that removes the handlers.
 */
export function installProcessGuards(
  logger: Pick<Logger, 'error'>,
  { count = countUncaughtError, process: proc = process }: ProcessGuardDeps = {},
): () => void {
  const guard = (kind: UncaughtKind) => (error: unknown) => {
    try {
      count(kind);
      logger.error({ err: error, kind }, `${kind.replace('_', ' ')} caught by the process guard; continuing`);
    } catch {
      // Logging itself failed (a closed stream, say): there is nobody left to tell.
    }
  };
  const onException = guard('uncaught_exception');
  const onRejection = guard('unhandled_rejection');
  proc.on('uncaughtException', onException);
  proc.on('unhandledRejection', onRejection);
  return () => {
    proc.off('uncaughtException', onException);
    proc.off('unhandledRejection', onRejection);
  };
}

import { UnavailableError } from '@costgov/errors';

// SQLSTATEs meaning the server went away or is not taking connections: admin_shutdown (a fast restart
// or pg_terminate_backend), crash_shutdown, cannot_connect_now (starting or in recovery), too many connections.
const unavailableStates = new Set(['57P01', '57P02', '57P03', '53300']);
const unreachable = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ETIMEDOUT',
  'EPIPE',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'ENOTFOUND',
  'EAI_AGAIN',
]);
// node-postgres reports a lost or refused connection with these messages and no code.
const lostConnection =
  /^(Connection terminated|timeout exceeded when trying to connect|Client has encountered a connection error|Client was closed and is not queryable|Cannot use a pool after calling end)/;

/** Whether a failure means the database could not be reached, rather than that the statement was wrong. */
export function isDatabaseUnavailable(error: unknown): boolean {
  if (!(error instanceof Error)) return false;
  const code = (error as { code?: unknown }).code;
  if (typeof code === 'string') {
    if (unavailableStates.has(code) || code.startsWith('08') || unreachable.has(code)) return true;
  }
  if (error instanceof AggregateError && error.errors.some(isDatabaseUnavailable)) return true; // IPv4 and IPv6 refused
  return lostConnection.test(error.message);
}

/**
 * The error a caller sees: an outage becomes UnavailableError (gRPC UNAVAILABLE, HTTP 503 with
 * Retry-After), with the driver's error kept as its cause; anything else passes unchanged.
 */
export function unavailableOr(error: unknown): unknown {
  if (error instanceof UnavailableError || !isDatabaseUnavailable(error)) return error;
  const unavailable = new UnavailableError(); // the client needs to know it may retry, not which backend failed
  unavailable.cause = error;
  return unavailable;
}

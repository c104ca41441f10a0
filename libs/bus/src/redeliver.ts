/**
 * Thrown by a handler that wants its message back after `delayMs` for a passing reason (a dependency it
 * waits for) and has logged that reason itself: the message is redelivered after that delay (at most
 * the bus's longest backoff), the failure does not count against `maxDeliver` (the broker's
 * `outageMaxDeliver` still bounds it), and the bus logs it at debug only, so each retry is one line.
 */
export class RedeliverLater extends Error {
  constructor(
    readonly delayMs: number,
    message: string,
    options?: ErrorOptions,
  ) {
    super(message, options);
    this.name = 'RedeliverLater';
  }
}

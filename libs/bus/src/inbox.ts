import type { Db, Queryable } from '@costgov/db';
import type { Logger } from '@costgov/log';
import type { Bus, ConsumeOptions, Consumer } from './bus';
import type { CloudEvent } from './cloudevent';

export interface InboxConsumeOptions extends Omit<ConsumeOptions, 'handler'> {
  db: Db;
  bus: Bus;
  logger: Logger;
  /** Applies the event's effect inside the transaction that records it as processed. */
  handler: (tx: Queryable, event: CloudEvent) => Promise<void>;
}

/**
 * An idempotent consumer: the event id goes into the inbox in the same transaction as the handler's
 * effect, so a redelivered or re-sent event changes nothing, and a failed handler leaves no trace and
 * is retried. The durable name is the inbox key, so consumers of one service must not share it.
 */
export function consumeWithInbox({
  db,
  bus,
  logger,
  handler,
  ...options
}: InboxConsumeOptions): Promise<Consumer> {
  const log = logger.child({ component: 'inbox', durable: options.durable });
  return bus.consume({
    ...options,
    handler: async (event) => {
      const applied = await db.transaction(async (tx) => {
        // On Postgres a concurrent delivery of the same event waits here until the first commits.
        const { rows } = await tx.query(
          'INSERT INTO inbox (consumer, event_id) VALUES ($1, $2) ON CONFLICT DO NOTHING RETURNING event_id',
          [options.durable, event.id],
        );
        if (rows.length === 0) return false;
        await handler(tx, event);
        return true;
      });
      if (!applied) log.debug({ event_id: event.id, event_type: event.type }, 'duplicate');
    },
  });
}

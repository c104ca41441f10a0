import type { Migration } from '@costgov/db';

/**
 * The outbox (events written with the change that caused them, published by the relay) and the inbox
 * (events a consumer has applied). Named `0000_` so it sorts before a service's own migrations.
 * `created_at` uses clock_timestamp() so rows written in one transaction keep their order.
 */
export const outboxMigration: Migration = {
  name: '0000_bus',
  sql: `
    CREATE TABLE outbox (
      id text PRIMARY KEY,
      type text NOT NULL,
      subject text,
      data jsonb NOT NULL,
      headers jsonb NOT NULL,
      created_at timestamptz NOT NULL DEFAULT clock_timestamp(),
      published_at timestamptz
    );
    CREATE INDEX outbox_unpublished ON outbox (created_at, id) WHERE published_at IS NULL;
    CREATE TABLE inbox (
      consumer text NOT NULL,
      event_id text NOT NULL,
      processed_at timestamptz NOT NULL DEFAULT now(),
      PRIMARY KEY (consumer, event_id)
    );
  `,
};

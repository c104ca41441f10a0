import { randomUUID } from 'node:crypto';
import {
  claimOf,
  defaultLockTtlMs,
  defaultTtlMs,
  type IdempotencyRecord,
  type IdempotencyStore,
  type IdempotencyStoreOptions,
} from './store';

export interface MemoryIdempotencyStoreOptions extends IdempotencyStoreOptions {
  /** Records kept at most; beyond it the oldest is dropped, so memory stays bounded. */
  maxEntries?: number;
  /** The clock, in milliseconds; tests pass their own. */
  now?: () => number;
}

interface Entry {
  record: IdempotencyRecord;
  expiresMs: number;
}

/**
 * Idempotency records of one process: the embedded default, and the fallback while Redis is away.
 * JavaScript runs each claim to completion, so it is atomic without further care.
 */
export function createMemoryIdempotencyStore({
  ttlMs = defaultTtlMs,
  lockTtlMs = defaultLockTtlMs,
  maxEntries = 100_000,
  now = Date.now,
}: MemoryIdempotencyStoreOptions = {}): IdempotencyStore & { size(): number } {
  // Insertion order is age order: a record is re-inserted when it changes, so the first is the oldest.
  const entries = new Map<string, Entry>();

  const live = (key: string): Entry | undefined => {
    const entry = entries.get(key);
    if (entry && entry.expiresMs > now()) return entry;
    entries.delete(key);
    return undefined;
  };

  const put = (key: string, record: IdempotencyRecord, lifeMs: number) => {
    entries.delete(key);
    while (entries.size >= maxEntries) entries.delete(entries.keys().next().value!);
    entries.set(key, { record, expiresMs: now() + lifeMs });
  };

  /** Whether `key` is still locked by `owner` (not expired, completed or taken over). */
  const heldBy = (key: string, owner: string) => {
    const record = live(key)?.record;
    return record?.state === 'running' && record.owner === owner;
  };

  return {
    async claim(key, fingerprint) {
      const existing = live(key);
      if (existing) return claimOf(existing.record);
      const owner = randomUUID();
      put(key, { state: 'running', fingerprint, owner }, lockTtlMs);
      return {
        state: 'claimed',
        lock: {
          async complete(response) {
            if (heldBy(key, owner)) put(key, { state: 'completed', fingerprint, response }, ttlMs);
          },
          async release() {
            if (heldBy(key, owner)) entries.delete(key);
          },
        },
      };
    },
    size: () => entries.size,
    async close() {
      entries.clear();
    },
  };
}

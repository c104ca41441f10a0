/**
 * Storage of Idempotency-Key records (draft-ietf-httpapi-idempotency-key-header): a key is first held by
 * the request that claimed it (a lock that expires, so a gateway that dies mid-way frees it), then holds
 * that request's response until it expires.
 */
import type { Logger } from '@costgov/log';

/** What the Redis and fallback stores log: connection errors, and the outage once. */
export type IdempotencyLogger = Pick<Logger, 'debug' | 'info' | 'warn'>;

/** A response as it is replayed: status, the headers worth replaying, and the body bytes in base64. */
export interface StoredResponse {
  status: number;
  headers: Record<string, string>;
  bodyBase64: string;
}

/** The claim of a key by the request that runs; exactly one request holds it at a time. */
export interface IdempotencyLock {
  /** Replaces the lock with `response`, kept for the store's TTL, if the lock is still this request's. Never throws. */
  complete(response: StoredResponse): Promise<void>;
  /** Frees the key, so that a retry runs again, if the lock is still this request's. Never throws. */
  release(): Promise<void>;
}

export type Claim =
  | { state: 'claimed'; lock: IdempotencyLock }
  /** Another request with this key is running; `fingerprint` is that request's. */
  | { state: 'running'; fingerprint: string }
  | { state: 'completed'; fingerprint: string; response: StoredResponse };

export interface IdempotencyStore {
  /**
   * Claims `key` for a request whose method, target and body hash to `fingerprint`, atomically: if the
   * key is free it is locked for this request, otherwise the caller learns what holds it. Throws only
   * when the store cannot answer (Redis down).
   */
  claim(key: string, fingerprint: string): Promise<Claim>;
  close(): Promise<void>;
}

export interface IdempotencyStoreOptions {
  /** Milliseconds a completed response is kept (24 h by default). */
  ttlMs?: number;
  /** Milliseconds a lock outlives a request that never completes or releases it (a dead gateway). */
  lockTtlMs?: number;
}

export const defaultTtlMs = 24 * 60 * 60 * 1000;
export const defaultLockTtlMs = 60_000;

/** What a record holds, in memory and (as JSON) in Redis. */
export type IdempotencyRecord =
  | { state: 'running'; fingerprint: string; owner: string }
  | { state: 'completed'; fingerprint: string; response: StoredResponse };

export function claimOf(record: IdempotencyRecord): Claim {
  return record.state === 'running'
    ? { state: 'running', fingerprint: record.fingerprint }
    : { state: 'completed', fingerprint: record.fingerprint, response: record.response };
}

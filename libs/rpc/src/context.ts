import { Metadata, type Deadline } from '@grpc/grpc-js';
import { wellFormed } from '@costgov/errors';
import { injectTrace } from '@costgov/log';

/** Who a call is for and by when it must finish; travels as gRPC metadata and the call deadline. */
export interface CallContext {
  teamId?: string;
  requestId?: string;
  actor?: string;
  deadline?: Date;
  /**
   * The caller's Idempotency-Key, hashed by the gateway, and the fingerprint of the request it came with:
   * the owning service records the key with the effect (libs/runtime `idempotentCalls`).
   */
  idempotencyKey?: string;
  idempotencyFingerprint?: string;
  /**
   * Set by a handler that answered from an earlier call's record instead of acting again; it travels back
   * as the `x-idempotent-replayed` trailer, and the client sets it on the context the caller passed.
   */
  replayed?: boolean;
}

const metadataKeys = {
  teamId: 'x-team-id',
  requestId: 'x-request-id',
  actor: 'x-actor',
  idempotencyKey: 'x-idempotency-key',
  idempotencyFingerprint: 'x-idempotency-fingerprint',
} as const;

/** The trailer of an answer a handler replayed (CallContext.replayed). */
export const replayedTrailer = 'x-idempotent-replayed';
const metadataFields = Object.keys(metadataKeys) as (keyof typeof metadataKeys)[];

/**
 * Metadata values must be printable ASCII (grpc-js throws otherwise), so each value travels
 * percent-encoded; the ids this system makes are left unchanged by that.
 */
export function metadataOf(ctx: CallContext): Metadata {
  const metadata = new Metadata();
  for (const [key, value] of Object.entries(callHeaders(ctx))) metadata.set(key, value);
  return metadata;
}

/**
 * The call's context as HTTP/2 request headers, as metadataOf sends it. The caller's trace travels as
 * `traceparent`: the active span's (the unary channel's client span, or grpc-js's instrumentation's when
 * installed), else the request's context.
 */
export function callHeaders(ctx: CallContext): Record<string, string> {
  const headers: Record<string, string> = {};
  for (const field of metadataFields) {
    const value = ctx[field];
    if (value) headers[metadataKeys[field]] = encodeURIComponent(wellFormed(value));
  }
  injectTrace(headers, headerSetter);
  return headers;
}

const headerSetter = {
  set: (headers: Record<string, string>, key: string, value: string) => {
    headers[key] = value;
  },
};

/** Reads W3C trace headers from call metadata, for `withIncomingTrace`. */
export const metadataGetter = {
  keys: (metadata: Metadata) => Object.keys(metadata.getMap()),
  get: (metadata: Metadata, key: string) => {
    const value = metadata.get(key)[0];
    return typeof value === 'string' ? value : undefined;
  },
};

function decoded(value: string): string {
  try {
    return decodeURIComponent(value);
  } catch {
    return value; // not sent by metadataOf; keep it as it came
  }
}

export function contextOf(metadata: Metadata, deadline: Deadline): CallContext {
  const ctx: CallContext = {};
  for (const [field, key] of Object.entries(metadataKeys)) {
    const value = metadata.get(key)[0];
    if (typeof value === 'string' && value !== '') ctx[field as keyof typeof metadataKeys] = decoded(value);
  }
  // grpc-js reports "no deadline" as Infinity.
  const at = deadline instanceof Date ? deadline.getTime() : deadline;
  if (Number.isFinite(at)) ctx.deadline = new Date(at);
  return ctx;
}

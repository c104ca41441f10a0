import { Metadata, type Deadline } from '@grpc/grpc-js';
import { wellFormed } from '@costgov/errors';
import { injectTrace } from '@costgov/log';

/** Who a call is for and by when it must finish; travels as gRPC metadata and the call deadline. */
export interface CallContext {
  teamId?: string;
  requestId?: string;
  actor?: string;
  deadline?: Date;
}

const metadataKeys = { teamId: 'x-team-id', requestId: 'x-request-id', actor: 'x-actor' } as const;

/**
 * Metadata values must be printable ASCII (grpc-js throws otherwise), so each value travels
 * percent-encoded; the ids this system makes are left unchanged by that.
 */
export function metadataOf(ctx: CallContext): Metadata {
  const metadata = new Metadata();
  for (const [field, key] of Object.entries(metadataKeys)) {
    const value = ctx[field as keyof typeof metadataKeys];
    if (value) metadata.set(key, encodeURIComponent(wellFormed(value)));
  }
  // The caller's trace travels as `traceparent`; grpc-js's instrumentation, when installed (an exporter
  // is configured), replaces it by its client span's.
  injectTrace(metadata, metadataSetter);
  return metadata;
}

const metadataSetter = { set: (metadata: Metadata, key: string, value: string) => metadata.set(key, value) };

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

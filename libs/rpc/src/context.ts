import { Metadata, type Deadline } from '@grpc/grpc-js';

/** Who a call is for and by when it must finish; travels as gRPC metadata and the call deadline. */
export interface CallContext {
  teamId?: string;
  requestId?: string;
  actor?: string;
  deadline?: Date;
}

const metadataKeys = { teamId: 'x-team-id', requestId: 'x-request-id', actor: 'x-actor' } as const;

export function metadataOf(ctx: CallContext): Metadata {
  const metadata = new Metadata();
  for (const [field, key] of Object.entries(metadataKeys)) {
    const value = ctx[field as keyof typeof metadataKeys];
    if (value) metadata.set(key, value);
  }
  return metadata;
}

export function contextOf(metadata: Metadata, deadline: Deadline): CallContext {
  const ctx: CallContext = {};
  for (const [field, key] of Object.entries(metadataKeys)) {
    const value = metadata.get(key)[0];
    if (typeof value === 'string' && value !== '') ctx[field as keyof typeof metadataKeys] = value;
  }
  // grpc-js reports "no deadline" as Infinity.
  const at = deadline instanceof Date ? deadline.getTime() : deadline;
  if (Number.isFinite(at)) ctx.deadline = new Date(at);
  return ctx;
}

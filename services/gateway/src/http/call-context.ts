import type { Request } from 'express';
import type { CallContext } from '@costgov/rpc';

declare module 'express-serve-static-core' {
  interface Request {
    /** The request's Idempotency-Key (hashed, per team) and fingerprint, once the key is claimed. */
    idempotency?: { key: string; fingerprint: string };
    /** The context of the request's calls to backends, made once (callContext). */
    rpcContext?: CallContext;
  }
}

/**
 * The context every backend call of this request carries: team, request id, and the Idempotency-Key the
 * owning service records with its effect. One object per request, so that a backend's answer that it
 * replayed an earlier call (`replayed`) reaches the idempotency middleware.
 */
export const callContext = (req: Request): CallContext =>
  (req.rpcContext ??= {
    teamId: req.principal.teamId,
    requestId: req.requestId,
    idempotencyKey: req.idempotency?.key,
    idempotencyFingerprint: req.idempotency?.fingerprint,
  });

import type { Request, Response } from 'express';
import { httpStatusOf, type DomainError, type ErrorCode, type FieldViolation } from '@costgov/errors';

/** Codes only the gateway answers (no backend raises them), beside the domain's. */
export type GatewayErrorCode = 'idempotency_key_reused';

const statusOf: Record<ErrorCode | GatewayErrorCode, number> = {
  ...httpStatusOf,
  idempotency_key_reused: 422,
};

/** A service names a code of the gateway's where its domain code is coarser (a reused Idempotency-Key). */
const apiCodeOf = (error: Pick<DomainError, 'code' | 'meta'>): ErrorCode | GatewayErrorCode =>
  error.meta.apiCode === 'idempotency_key_reused' ? 'idempotency_key_reused' : error.code;

/** The spec's error body: `{"error": {"code", "message", "details": [{field, message}]}}`. */
export function sendError(
  res: Response,
  code: ErrorCode | GatewayErrorCode,
  message: string,
  details: FieldViolation[] = [],
  status: number = statusOf[code],
): void {
  // Not an answer of this request's own: the idempotency middleware must not keep it for the key.
  if (code === 'idempotency_key_reused') res.locals.idempotencyKeyReused = true;
  sendJson(res, status, { error: { code, message, details } });
}

export function sendData(res: Response, status: number, data: unknown, meta?: Record<string, unknown>): void {
  sendJson(res, status, meta ? { data, meta } : { data });
}

/**
 * A JSON answer written straight to the response: what res.json does for us (status, type, length, no
 * body for HEAD) without its per-request charset parsing and freshness checks, on every request's path.
 */
function sendJson(res: Response, status: number, body: unknown): void {
  const payload = JSON.stringify(body);
  res.statusCode = status;
  res.setHeader('Content-Type', 'application/json; charset=utf-8');
  res.setHeader('Content-Length', Buffer.byteLength(payload));
  if (res.req.method === 'HEAD') res.end();
  else res.end(payload);
}

export const scimErrorSchema = 'urn:ietf:params:scim:api:messages:2.0:Error';
export const scimMediaType = 'application/scim+json';

export const isScimRequest = (req: Request): boolean => req.path.startsWith('/scim/');

/** The SCIM error body (RFC 7644 section 3.12), with `status` as a string. */
export function sendScimError(res: Response, status: number, detail: string, scimType?: string): void {
  res
    .status(status)
    .type(scimMediaType)
    .send(
      JSON.stringify({
        schemas: [scimErrorSchema],
        status: String(status),
        ...(scimType ? { scimType } : {}),
        detail,
      }),
    );
}

/** Sends a domain error in the envelope of the API the request was for. */
export function sendDomainError(
  req: Request,
  res: Response,
  error: Pick<DomainError, 'code' | 'message' | 'details' | 'meta'>,
  status?: number,
): void {
  if (error.meta.retryAfterSeconds) res.setHeader('Retry-After', error.meta.retryAfterSeconds);
  // A service may name the exact HTTP status (SCIM's 412, say) where the code alone is coarser.
  const answer = status ?? (error.meta.status ? Number(error.meta.status) : httpStatusOf[error.code]);
  if (isScimRequest(req)) return sendScimError(res, answer, error.message, error.meta.scimType);
  sendError(res, apiCodeOf(error), error.message, error.details, answer);
}

import { hash } from 'node:crypto';
import type { Request, RequestHandler, Response } from 'express';
import { BadRequestError, ConflictError } from '@costgov/errors';
import type { IdempotencyLock, IdempotencyStore, StoredResponse } from '@costgov/idempotency';
import { sendError } from './envelope';

/** The key as the draft writes it (a quoted sf-string) or as Stripe's clients do (bare). */
const quoted = /^"((?:[^"\\]|\\["\\])*)"$/;
const acceptableKey = /^[\x20-\x7e]{1,255}$/;
const keyRule = 'must be 1 to 255 printable ASCII characters, given once';

/** Headers a replay repeats; the rest (X-Request-Id, RateLimit) belong to the request that replays. */
const replayedHeaders = ['content-type', 'location', 'etag'];
/** A larger answer is not kept (no POST answers near it); its key is freed instead. */
const maxStoredBytes = 1024 * 1024;

/**
 * The streamed cost-data upload is idempotent by nature (a billing period uploaded again replaces that
 * period), and its body is never held whole, so the header is accepted there and ignored.
 */
export const streamedUpload = /^\/v1\/guard\/connections\/[^/]+\/cost-data\/?(?:\?|$)/;

/**
 * Answers kept for replay: what the operation decided (2xx; 404, 409 and 422 about the resources and the
 * body). Not kept, so a retry with the same key runs again: 5xx and 503 (a retry may succeed), 429,
 * 401/403 (credential), 400/408/413/415 (the request could not be read, so nothing ran).
 */
const kept = (status: number) =>
  (status >= 200 && status < 300) || status === 404 || status === 409 || status === 422;

/**
 * `Idempotency-Key` on POST (draft-ietf-httpapi-idempotency-key-header, with Stripe's semantics): the first
 * request with a key runs and its answer is kept; a retry with the same key and the same request gets
 * that answer again with `Idempotent-Replayed: true`; the same key on another request is 422
 * `idempotency_key_reused`; a retry while the first still runs is 409 with Retry-After. Keys are per team.
 * Runs after authentication and body parsing; a request without the header is not affected.
 *
 * The store (Redis) is a cache in front of the guarantee: the key and fingerprint travel with the call to
 * the service that owns the effect, which records them in the effect's own transaction. A retry whose
 * first answer never reached the store (the gateway died, Redis was down) is answered by that service from
 * its record, also with `Idempotent-Replayed: true`.
 */
export function idempotency(store: IdempotencyStore): RequestHandler {
  return async (req, res, next) => {
    if (req.method !== 'POST' || streamedUpload.test(req.originalUrl)) return next();
    const key = idempotencyKeyOf(req);
    if (key === undefined) return next();
    const fingerprint = fingerprintOf(req);
    const keyHash = hash('sha256', key);
    const claim = await store.claim(`${req.principal.teamId}:${keyHash}`, fingerprint);
    if (claim.state === 'claimed') {
      // The owning service records the key with its effect: the guarantee across any crash.
      req.idempotency = { key: keyHash, fingerprint };
      keepAnswer(req, res, claim.lock);
      return next();
    }
    if (claim.fingerprint !== fingerprint) {
      return sendError(
        res,
        'idempotency_key_reused',
        'This Idempotency-Key was used for a different request (method, path or body); use a new key.',
        [{ field: 'Idempotency-Key', message: 'was used with a different request' }],
        422,
      );
    }
    if (claim.state === 'running') {
      throw new ConflictError(
        'A request with this Idempotency-Key is still being processed; retry after it completes.',
        [{ field: 'Idempotency-Key', message: 'is in use by a request still running' }],
        { retryAfterSeconds: '1' },
      );
    }
    replay(res, claim.response);
  };
}

/** The key, or undefined without the header; 400 when it is malformed or given twice. */
function idempotencyKeyOf(req: Request): string | undefined {
  const values = req.headersDistinct['idempotency-key'];
  if (!values) return undefined;
  const value = values[0]!;
  const match = quoted.exec(value);
  const key = match ? match[1]!.replace(/\\(["\\])/g, '$1') : value;
  if (values.length !== 1 || !acceptableKey.test(key)) {
    throw new BadRequestError(`The Idempotency-Key header ${keyRule}.`, [
      { field: 'Idempotency-Key', message: keyRule },
    ]);
  }
  return key;
}

/**
 * What makes two requests the same: method, path with query as sent, and the body as parsed, in a
 * canonical form (keys sorted), so that spacing and key order do not make a retry a different request.
 */
export function fingerprintOf(req: Pick<Request, 'method' | 'originalUrl' | 'body'>): string {
  const body = req.body === undefined ? '' : canonicalJson(req.body);
  return hash('sha256', `${req.method}\n${req.originalUrl}\n${body}`);
}

/**
 * JSON Canonicalization (RFC 8785) of a value JSON.parse produced: sorted keys (by UTF-16 code units, as
 * `sort` does), and JSON.stringify for scalars, whose number form is the one the RFC prescribes.
 */
export function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  if (value !== null && typeof value === 'object') {
    const entries = Object.keys(value)
      .sort()
      .map((k) => `${JSON.stringify(k)}:${canonicalJson((value as Record<string, unknown>)[k])}`);
    return `{${entries.join(',')}}`;
  }
  return JSON.stringify(value);
}

function replay(res: Response, response: StoredResponse): void {
  const body = Buffer.from(response.bodyBase64, 'base64');
  res.statusCode = response.status;
  for (const [name, value] of Object.entries(response.headers)) res.setHeader(name, value);
  res.setHeader('Idempotent-Replayed', 'true');
  res.setHeader('Content-Length', body.length);
  res.end(body);
}

type Write = (chunk: unknown, ...rest: unknown[]) => boolean;
type End = (chunk?: unknown, ...rest: unknown[]) => Response;

/**
 * Keeps the answer the handler writes (when `kept`) or frees the key, as the handler ends the response.
 * A client that went away meanwhile changes nothing: the operation still completes, and its retry must
 * find the answer rather than run again. A handler that never ends (a gateway that died) frees the key
 * by the lock's expiry.
 */
function keepAnswer(req: Request, res: Response, lock: IdempotencyLock): void {
  const chunks: Buffer[] = [];
  let size = 0;
  let settled = false;
  const collect = (chunk: unknown, encoding: unknown) => {
    if (chunk === undefined || chunk === null || typeof chunk === 'function') return;
    const buffer =
      typeof chunk === 'string'
        ? Buffer.from(chunk, typeof encoding === 'string' ? (encoding as BufferEncoding) : 'utf8')
        : Buffer.from(chunk as Uint8Array);
    size += buffer.length;
    if (size <= maxStoredBytes) chunks.push(buffer);
  };
  const settle = () => {
    if (settled) return;
    settled = true;
    // A service that refused the key for another request's (its record outlived the store's) holds the
    // key's real answer: keeping the refusal here would answer the original request's retries with it.
    if (!kept(res.statusCode) || res.locals.idempotencyKeyReused || size > maxStoredBytes)
      return void lock.release();
    const headers: Record<string, string> = {};
    for (const name of replayedHeaders) {
      const value = res.getHeader(name);
      if (value !== undefined) headers[name] = String(value);
    }
    void lock.complete({
      status: res.statusCode,
      headers,
      bodyBase64: Buffer.concat(chunks).toString('base64'),
    });
  };
  const write = res.write.bind(res) as Write;
  const end = res.end.bind(res) as End;
  (res as { write: Write }).write = (chunk, ...rest) => {
    collect(chunk, rest[0]);
    return write(chunk, ...rest);
  };
  (res as { end: End }).end = (chunk, ...rest) => {
    // The service answered from its own record of the key: an earlier attempt acted (its answer was lost
    // with a gateway, or never reached Redis).
    if (req.rpcContext?.replayed && !res.headersSent) res.setHeader('Idempotent-Replayed', 'true');
    collect(chunk, rest[0]);
    settle();
    return end(chunk, ...rest);
  };
}

import type { IncomingMessage } from 'node:http';
import v8 from 'node:v8';
import { Router, type Request } from 'express';
import type { MessageInitShape } from '@bufbuild/protobuf';
import { timestampDate } from '@bufbuild/protobuf/wkt';
import type { costs } from '@costgov/contracts';
import { BadRequestError, DomainError } from '@costgov/errors';
import type { RpcClient } from '@costgov/rpc';
import { sendData } from '../http/envelope';
import { renewLeaseUntilDone } from '../http/rate-limit';
import { textRule } from '../http/text-rule';
import { callContext } from '../http/call-context';

type CostDataClient = RpcClient<typeof costs.CostDataService>;
type UploadPart = MessageInitShape<typeof costs.UploadCostDataRequestSchema>;

export interface UploadLimits {
  /** Largest body accepted, in bytes as sent (compressed when gzip); larger answers 413. */
  maxBytes: number;
  /** An upload that sends nothing for this long is answered 408 and cancelled. */
  idleTimeoutMs: number;
  /** How often the upload's rate-limit concurrency slot is renewed (a third of its lease TTL). */
  leaseRenewMs: number;
}

export const defaultUploadLimits: UploadLimits = {
  maxBytes: 2 * 1024 ** 3,
  idleTimeoutMs: 30_000,
  leaseRenewMs: 20_000,
};

/** Whether a request is a cost-data upload, whose body arrives over minutes and is streamed, not parsed. */
export const isCostDataUpload = (req: IncomingMessage): boolean =>
  req.method === 'POST' && /^\/v1\/guard\/connections\/[^/?]+\/cost-data\/?(\?|$)/.test(req.url ?? '');

/** gRPC messages stay far below grpc-js's 4 MiB receive limit, whatever the socket hands over. */
const maxChunkBytes = 256 * 1024;

export const ingestSummaryJson = (s: costs.IngestSummary) => ({
  connection_id: s.connectionId,
  rows: Number(s.rows),
  focus_version: s.focusVersion,
  billing_periods: s.billingPeriods,
  billing_period_ranges: s.billingPeriodRanges.map((range) => ({
    start: range.start ? timestampDate(range.start).toISOString() : null,
    end: range.end ? timestampDate(range.end).toISOString() : null,
  })),
  totals: s.totals.map((t) => ({
    currency: t.currency,
    billed_cost: t.billedCost,
    effective_cost: t.effectiveCost,
  })),
  rows_replaced: Number(s.rowsReplaced),
  bytes: Number(s.bytes),
  duration_ms: Number(s.durationMs),
  warnings: s.warnings.map((w) => ({ code: w.code, message: w.message, details: { ...w.details } })),
});

const status = (code: number) => ({ status: String(code) });
const mebibytes = (bytes: number) => `${Math.round((bytes / 1024 ** 2) * 10) / 10} MiB`;

/**
 * The encoding the costs service must undo: `text/csv` as sent or with `Content-Encoding: gzip`, or
 * `application/gzip`. Anything else is 415.
 */
function contentEncodingOf(req: Request): 'identity' | 'gzip' {
  const type = (req.get('content-type') ?? '').split(';')[0]!.trim().toLowerCase();
  const encoding = (req.get('content-encoding') ?? 'identity').trim().toLowerCase();
  if (type === 'text/csv' && (encoding === 'identity' || encoding === 'gzip')) return encoding;
  if (type === 'application/gzip' && encoding === 'identity') return 'gzip';
  const what =
    type === 'text/csv' || type === 'application/gzip'
      ? `Content-Encoding '${encoding}' is not supported here`
      : `Content-Type '${type || '(none)'}' is not accepted here`;
  throw new BadRequestError(
    `${what}: send text/csv (optionally with Content-Encoding: gzip) or application/gzip.`,
    [],
    status(415),
  );
}

const tooLarge = (limits: UploadLimits) =>
  new BadRequestError(`The upload exceeds the limit of ${mebibytes(limits.maxBytes)}.`, [], status(413));

/**
 * The upload as the costs service reads it: the start message, then the body's bytes as they arrive.
 * Nothing is buffered beyond one socket read: the gRPC call pulls the next chunk only when the service
 * has taken the last (backpressure reaches the client through TCP). Reading never destroys the request,
 * so an answer can still be sent when the call ends early.
 */
async function* uploadParts(
  req: Request,
  start: UploadPart,
  limits: UploadLimits,
): AsyncGenerator<UploadPart> {
  yield start;
  const chunks = req.iterator({ destroyOnReturn: false }) as AsyncIterator<Buffer>;
  let received = 0;
  try {
    for (;;) {
      const next = await nextWithin(chunks, limits.idleTimeoutMs, req);
      if (next.done) break;
      received += next.value.byteLength;
      if (received > limits.maxBytes) throw tooLarge(limits);
      for (let at = 0; at < next.value.byteLength; at += maxChunkBytes) {
        yield { part: { case: 'chunk', value: next.value.subarray(at, at + maxChunkBytes) } };
      }
    }
  } finally {
    void chunks.return?.(); // detaches from the request without destroying it
  }
  if (!req.complete) throw cutOff();
}

const cutOff = () => new BadRequestError('The upload was cut off before its end.');

/** The next chunk, or a 408 when none arrives within `ms`, or a 400 when the client went away. */
async function nextWithin(
  chunks: AsyncIterator<Buffer>,
  ms: number,
  req: Request,
): Promise<IteratorResult<Buffer>> {
  let timer: NodeJS.Timeout | undefined;
  const idle = new Promise<never>((_resolve, reject) => {
    timer = setTimeout(
      () =>
        reject(
          new BadRequestError(
            `The upload sent nothing for ${ms / 1000} s; it was cancelled.`,
            [],
            status(408),
          ),
        ),
      ms,
    );
  });
  try {
    return await Promise.race([chunks.next(), idle]);
  } catch (error) {
    if (error instanceof DomainError) throw error;
    throw req.complete ? error : cutOff(); // the client aborted, or its socket failed
  } finally {
    clearTimeout(timer);
  }
}

/**
 * `POST /v1/guard/connections/:id/cost-data`: streams one FOCUS file (CSV, or gzip-compressed CSV) to the
 * costs service and answers 200 with what was stored. Mounted before the JSON body parser, so the body
 * reaches this route untouched.
 */
export function costDataRoutes(client: CostDataClient, limits: UploadLimits = defaultUploadLimits): Router {
  // An upload allocates a buffer per chunk several times over (socket, protobuf, gRPC frame): by default V8
  // runs a full collection of the whole heap every 64 MiB of them, most of the gateway's CPU during an
  // upload. Counted in the heap's own limit instead, they are collected with the rest (issue 19).
  v8.setFlagsFromString('--external-memory-accounted-in-global-limit');
  const router = Router();

  router.post('/:id/cost-data', textRule('guard'), async (req, res) => {
    renewLeaseUntilDone(res, limits.leaseRenewMs);
    try {
      // The operation has no query parameters; as elsewhere, an unknown one is an error, not ignored.
      const unknown = Object.keys(req.query as object);
      if (unknown.length > 0) {
        throw new BadRequestError(
          `'${unknown[0]}' is not a parameter of this operation.`,
          unknown.map((field) => ({ field, message: 'is not a parameter of this operation' })),
        );
      }
      const contentEncoding = contentEncodingOf(req);
      const declaredBytes = Number(req.get('content-length') ?? 0);
      if (declaredBytes > limits.maxBytes) throw tooLarge(limits);
      const start: UploadPart = {
        part: {
          case: 'start',
          value: {
            connectionId: String(req.params.id),
            contentEncoding,
            declaredBytes: BigInt(declaredBytes),
          },
        },
      };
      const summary = await client.uploadCostData(uploadParts(req, start, limits), callContext(req));
      sendData(res, 200, ingestSummaryJson(summary));
    } finally {
      discardRest(req, limits.idleTimeoutMs);
    }
  });

  return router;
}

/**
 * After an answer given before the whole body arrived (a refused file, a limit, a backend down), the
 * rest of the body is read and dropped rather than the connection closed at once: closing a socket with
 * unread data makes TCP reset it, and the client could lose the answer it has not read yet. A client
 * that keeps sending past `lingerMs` is disconnected.
 */
function discardRest(req: Request, lingerMs: number): void {
  if (req.complete || req.destroyed) return;
  const linger = setTimeout(() => req.socket.destroy(), lingerMs);
  req.once('end', () => clearTimeout(linger));
  req.once('close', () => clearTimeout(linger));
  req.resume();
}

import type { ErrorRequestHandler, Request, RequestHandler, Response } from 'express';
import { DomainError, type ErrorCode, type FieldViolation } from '@costgov/errors';
import type { Logger } from '@costgov/log';
import { sendDomainError } from './envelope';

const fail = (
  req: Request,
  res: Response,
  code: ErrorCode,
  message: string,
  details: FieldViolation[] = [],
  status?: number,
  meta: Record<string, string> = {},
) => sendDomainError(req, res, { code, message, details, meta }, status);

export const notFound: RequestHandler = (req, res) => {
  fail(req, res, 'not_found', `No route for ${req.method} ${req.path}.`);
};

/** What body-parser and the router pass on for a request they could not read (http-errors). */
interface ClientError {
  status?: number;
  type?: string;
  code?: string;
  message: string;
}

/** The envelope's message for a 4xx that did not come from our own code. */
function clientErrorMessage(error: ClientError, req: Request): string {
  if (error.code?.startsWith('Z_') || error.type === 'stream.encoding.set')
    return `The body is not valid ${req.get('content-encoding') ?? 'compressed'} data, as its Content-Encoding says it is.`;
  if (error.type === 'request.aborted') return 'The request was aborted before its body arrived.';
  if (error.type === 'request.size.invalid') return 'The body is shorter or longer than its Content-Length.';
  if (error instanceof URIError) return 'The path is not valid percent-encoded UTF-8.';
  return 'The request could not be read.';
}

/**
 * Every error becomes the envelope of its API (the spec's for /v1, SCIM's for /scim/v2); nothing of a
 * stack or an internal message reaches the client.
 */
export function errorHandler(logger: Logger): ErrorRequestHandler {
  return (error, req, res, _next) => {
    if (res.headersSent) {
      req.socket.destroy();
      return;
    }
    if (error instanceof DomainError) {
      if (error.code === 'service_unavailable') res.setHeader('Retry-After', '1');
      if (error.code === 'internal_error') logger.error({ err: error }, 'backend internal error');
      return sendDomainError(req, res, error);
    }
    const type = (error as { type?: string }).type;
    if (type === 'entity.parse.failed') {
      return fail(req, res, 'bad_request', 'The body is not valid JSON.', [], 400, {
        scimType: 'invalidSyntax',
      });
    }
    if (type === 'entity.too.large')
      return fail(req, res, 'bad_request', 'The body is larger than the 1 MiB limit.', [], 413);
    if (type === 'encoding.unsupported' || type === 'charset.unsupported') {
      return fail(req, res, 'bad_request', (error as Error).message, [], 415);
    }
    const status = (error as ClientError).status;
    if (typeof status === 'number' && status >= 400 && status < 500) {
      return fail(req, res, 'bad_request', clientErrorMessage(error as ClientError, req), [], 400, {
        scimType: 'invalidSyntax',
      });
    }
    logger.error({ err: error }, 'unhandled error');
    fail(req, res, 'internal_error', 'An unexpected error occurred.');
  };
}

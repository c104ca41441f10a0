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

interface ValidatorError {
  status: number;
  message: string;
  errors?: Array<{ path: string; message: string }>;
}

/** `/body/approval_rules/approvers/0` → `approval_rules.approvers[0]`; `/query/per_page` → `per_page`. */
function fieldOf(path: string): string {
  return path
    .replace(/^\/?(body|query|params|headers|path)\/?/, '')
    .split('/')
    .filter(Boolean)
    .reduce((out, part) => (/^\d+$/.test(part) ? `${out}[${part}]` : out ? `${out}.${part}` : part), '');
}

function violationsOf(error: ValidatorError): FieldViolation[] {
  return (error.errors ?? []).map((e) => ({ field: fieldOf(e.path) || 'body', message: e.message }));
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
    const validation = error as ValidatorError;
    if (typeof validation.status === 'number' && Array.isArray(validation.errors)) {
      const details = violationsOf(validation);
      if (validation.status === 405 || validation.status === 404) return notFound(req, res, () => undefined);
      if (validation.status === 415) return fail(req, res, 'bad_request', validation.message, details, 415);
      const inBody = (validation.errors ?? []).some((e) => e.path.startsWith('/body'));
      if (validation.status === 400 && inBody) {
        return fail(req, res, 'validation_error', 'The request body failed validation.', details);
      }
      if (validation.status === 400)
        return fail(req, res, 'bad_request', 'The request parameters are invalid.', details);
    }
    logger.error({ err: error }, 'unhandled error');
    fail(req, res, 'internal_error', 'An unexpected error occurred.');
  };
}

import { randomUUID } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import type { RequestHandler } from 'express';
import { withIncomingTrace, withLogContext } from '@costgov/log';
import { sendDomainError } from './envelope';

const acceptableId = /^[A-Za-z0-9._:-]{8,128}$/;

declare module 'express-serve-static-core' {
  interface Request {
    requestId: string;
  }
}

/**
 * Takes the caller's X-Request-Id when it is sane, otherwise makes one; echoes it and logs with it. The
 * request continues the caller's `traceparent` (or a new trace), and its log context is the one of the
 * whole request: authentication adds the team to it (`addLogContext`) rather than nesting another.
 */
export const requestContext: RequestHandler = (req, res, next) => {
  const incoming = req.headers['x-request-id'];
  req.requestId =
    typeof incoming === 'string' && acceptableId.test(incoming)
      ? incoming
      : `req_${randomUUID().replaceAll('-', '')}`;
  res.setHeader('X-Request-Id', req.requestId);
  withIncomingTrace(req.headers, () => withLogContext({ requestId: req.requestId }, next));
};

const hasBody = (req: IncomingMessage) =>
  req.headers['transfer-encoding'] !== undefined ||
  (req.headers['content-length'] !== undefined && req.headers['content-length'] !== '0');

/**
 * Answers 408 (in the envelope of the API) when a request body has not fully arrived within `ms`, and
 * closes the connection: a client trickling its body must not hold its concurrency slot for longer.
 * Requests `exempt` says so of (uploads) bound their body themselves.
 */
export function bodyTimeout(
  ms: number,
  exempt: (req: IncomingMessage) => boolean = () => false,
): RequestHandler {
  return (req, res, next) => {
    if (req.complete || !hasBody(req) || exempt(req)) return next();
    const timer = setTimeout(() => {
      if (req.complete || res.headersSent) return;
      res.setHeader('Connection', 'close');
      res.once('finish', () => req.socket.destroy());
      sendDomainError(
        req,
        res,
        {
          code: 'bad_request',
          message: `The request body did not arrive within ${ms / 1000} s.`,
          details: [],
          meta: {},
        },
        408,
      );
    }, ms);
    const clear = () => clearTimeout(timer);
    req.once('end', clear);
    res.once('close', clear);
    next();
  };
}

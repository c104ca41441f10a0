import { randomUUID } from 'node:crypto';
import type { RequestHandler } from 'express';
import { withLogContext } from '@costgov/log';

const acceptableId = /^[A-Za-z0-9._:-]{8,128}$/;

declare module 'express-serve-static-core' {
  interface Request {
    requestId: string;
  }
}

/** Takes the caller's X-Request-Id when it is sane, otherwise makes one; echoes it and logs with it. */
export const requestContext: RequestHandler = (req, res, next) => {
  const incoming = req.get('x-request-id');
  req.requestId =
    incoming && acceptableId.test(incoming) ? incoming : `req_${randomUUID().replaceAll('-', '')}`;
  res.setHeader('X-Request-Id', req.requestId);
  withLogContext({ requestId: req.requestId }, next);
};

import { isUtf8 } from 'node:buffer';
import express, { type RequestHandler } from 'express';
import { BadRequestError } from '@costgov/errors';

export const bodyLimit = '1mb';

/**
 * JSON bodies (`application/json` and `application/*+json`, SCIM's included) up to 1 MiB, decompressed
 * when Content-Encoding says so. Bytes that are not UTF-8 are refused rather than stored as U+FFFD.
 */
export const jsonBody: RequestHandler = express.json({
  limit: bodyLimit,
  type: ['application/json', 'application/*+json'],
  verify: (_req, _res, buffer, encoding) => {
    if (encoding.toLowerCase().replace('-', '') === 'utf8' && !isUtf8(buffer)) {
      throw new BadRequestError('The body is not valid UTF-8.', [], { scimType: 'invalidSyntax' });
    }
  },
});

import type { Response } from 'express';
import { httpStatusOf, type ErrorCode, type FieldViolation } from '@costgov/errors';

/** The spec's error body: `{"error": {"code", "message", "details": [{field, message}]}}`. */
export function sendError(
  res: Response,
  code: ErrorCode,
  message: string,
  details: FieldViolation[] = [],
  status: number = httpStatusOf[code],
): void {
  res.status(status).json({ error: { code, message, details } });
}

export function sendData(
  res: Response,
  status: number,
  data: unknown,
  meta: Record<string, unknown> = {},
): void {
  res.status(status).json({ data, meta });
}

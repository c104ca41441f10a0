/**
 * Domain errors: the few ways an operation can fail that a caller can act on. Services throw these; the
 * gRPC adapter maps them to status codes (and back), and the gateway maps them to HTTP in one table.
 */
export type ErrorCode =
  | 'bad_request'
  | 'unauthorized'
  | 'forbidden'
  | 'not_found'
  | 'conflict'
  | 'validation_error'
  | 'rate_limited'
  | 'service_unavailable'
  | 'internal_error';

export interface FieldViolation {
  field: string;
  message: string;
}

export class DomainError extends Error {
  constructor(
    readonly code: ErrorCode,
    message: string,
    readonly details: FieldViolation[] = [],
    /** Protocol-specific facts that travel with the error (e.g. a SCIM `scimType`, a retry delay). */
    readonly meta: Record<string, string> = {},
  ) {
    super(message);
    this.name = new.target.name;
  }
}

export class BadRequestError extends DomainError {
  constructor(message: string, details: FieldViolation[] = [], meta: Record<string, string> = {}) {
    super('bad_request', message, details, meta);
  }
}

export class UnauthenticatedError extends DomainError {
  constructor(message = 'Missing or invalid credential.') {
    super('unauthorized', message);
  }
}

export class ForbiddenError extends DomainError {
  constructor(message = 'The credential does not allow this operation.') {
    super('forbidden', message);
  }
}

export class NotFoundError extends DomainError {
  constructor(resource: string, id: string) {
    super('not_found', `${resource} '${id}' was not found.`);
  }
}

export class ConflictError extends DomainError {
  constructor(message: string, details: FieldViolation[] = [], meta: Record<string, string> = {}) {
    super('conflict', message, details, meta);
  }
}

export class ValidationError extends DomainError {
  constructor(details: FieldViolation[], message = 'The request body failed validation.') {
    super('validation_error', message, details);
  }
}

export class UnavailableError extends DomainError {
  constructor(message = 'A backend service is unavailable; retry shortly.') {
    super('service_unavailable', message);
  }
}

/** HTTP status of each code: the one place that decides it. */
export const httpStatusOf: Record<ErrorCode, number> = {
  bad_request: 400,
  unauthorized: 401,
  forbidden: 403,
  not_found: 404,
  conflict: 409,
  validation_error: 422,
  rate_limited: 429,
  service_unavailable: 503,
  internal_error: 500,
};

/** Collects field violations and throws one ValidationError with all of them. */
export class Violations {
  private readonly list: FieldViolation[] = [];

  add(field: string, message: string): this {
    this.list.push({ field, message });
    return this;
  }

  check(condition: boolean, field: string, message: string): this {
    if (!condition) this.add(field, message);
    return this;
  }

  throwIfAny(): void {
    if (this.list.length > 0) throw new ValidationError(this.list);
  }
}
export * from './text';

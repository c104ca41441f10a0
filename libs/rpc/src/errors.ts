import { Metadata, status as Status, type ServiceError, type StatusObject } from '@grpc/grpc-js';
import { create, fromBinary, toBinary, type DescMessage, type MessageShape } from '@bufbuild/protobuf';
import { anyPack, anyUnpack, type Any } from '@bufbuild/protobuf/wkt';
import { rpcErrors, rpcStatus } from '@costgov/contracts';
import {
  BadRequestError,
  ConflictError,
  DomainError,
  ForbiddenError,
  NotFoundError,
  UnauthenticatedError,
  UnavailableError,
  ValidationError,
  truncateChars,
  wellFormed,
  type ErrorCode,
  type FieldViolation,
} from '@costgov/errors';

/** ErrorInfo.domain of errors our services raise on purpose; a status without it came from the transport. */
export const errorDomain = 'costgov';

const detailsTrailer = 'grpc-status-details-bin';
const internalMessage = 'An internal error occurred.';

/** The gRPC status of each domain code: the one place that decides it. */
export const grpcStatusOf: Record<ErrorCode, Status> = {
  bad_request: Status.INVALID_ARGUMENT,
  validation_error: Status.INVALID_ARGUMENT,
  not_found: Status.NOT_FOUND,
  // Duplicates and illegal state changes share the code `conflict`; ErrorInfo.reason keeps it exact.
  conflict: Status.FAILED_PRECONDITION,
  unauthorized: Status.UNAUTHENTICATED,
  forbidden: Status.PERMISSION_DENIED,
  rate_limited: Status.RESOURCE_EXHAUSTED,
  service_unavailable: Status.UNAVAILABLE,
  internal_error: Status.INTERNAL,
};

/**
 * Domain code of a status that carries no ErrorInfo of ours. RESOURCE_EXHAUSTED is missing on purpose:
 * without our ErrorInfo it means an oversized message, not a rate limit.
 */
const codeOfForeignStatus: Partial<Record<Status, ErrorCode>> = {
  [Status.INVALID_ARGUMENT]: 'bad_request',
  [Status.OUT_OF_RANGE]: 'bad_request',
  [Status.NOT_FOUND]: 'not_found',
  [Status.ALREADY_EXISTS]: 'conflict',
  [Status.FAILED_PRECONDITION]: 'conflict',
  [Status.ABORTED]: 'conflict',
  [Status.UNAUTHENTICATED]: 'unauthorized',
  [Status.PERMISSION_DENIED]: 'forbidden',
  [Status.UNAVAILABLE]: 'service_unavailable',
  [Status.DEADLINE_EXCEEDED]: 'service_unavailable',
  [Status.CANCELLED]: 'service_unavailable',
};

/** The class a caller gets back for each code, so `instanceof NotFoundError` works across the wire. */
const classOf: Record<ErrorCode, new (...args: never[]) => DomainError> = {
  bad_request: BadRequestError,
  validation_error: ValidationError,
  not_found: NotFoundError,
  conflict: ConflictError,
  unauthorized: UnauthenticatedError,
  forbidden: ForbiddenError,
  rate_limited: DomainError,
  service_unavailable: UnavailableError,
  internal_error: DomainError,
};

const isErrorCode = (value: string): value is ErrorCode => Object.hasOwn(grpcStatusOf, value);

/**
 * The status a handler's failure answers with. A DomainError travels whole (code in ErrorInfo, field
 * violations in BadRequest); anything else becomes a generic INTERNAL so no message or stack leaks.
 * Every text is made well-formed first: grpc-js percent-encodes the message with encodeURI, which throws
 * on a lone surrogate (a cut emoji) and, thrown inside the server, would end the process.
 */
export function toGrpcStatus(error: unknown): StatusObject {
  try {
    return statusOf(error instanceof DomainError ? error : internalError());
  } catch {
    return statusOf(internalError()); // e.g. a DomainError subclass whose fields are not strings
  }
}

const internalError = () => new DomainError('internal_error', internalMessage);

/**
 * Bounds of what a status carries, in characters. An error may quote a huge input (a 100,000-character
 * attribute name), and a status larger than the caller's metadata limit arrives as a transport error (a
 * 500 where a 400 was due). With these bounds the worst case stays far below `maxMetadataBytes`.
 */
export const statusBounds = { message: 500, field: 100, description: 200, violations: 20, meta: 200 };
/** Headers and trailers a client and server accept (grpc-js's default is 8 KiB; node's http2 sends at most 64 KiB). */
export const maxMetadataBytes = 256 * 1024;

/** Well-formed and at most `max` characters, marked with … when cut. */
const bounded = (value: string, max: number): string => {
  const text = wellFormed(value);
  const cut = truncateChars(text, max);
  return cut.length < text.length ? `${cut}…` : text;
};

function statusOf(domain: DomainError): StatusObject {
  const code = grpcStatusOf[domain.code] ?? Status.INTERNAL;
  const message = bounded(domain.message, statusBounds.message);
  const meta = Object.fromEntries(
    Object.entries(domain.meta).map(([key, value]) => [
      bounded(key, statusBounds.field),
      bounded(value, statusBounds.meta),
    ]),
  );
  const details: Any[] = [
    anyPack(
      rpcErrors.ErrorInfoSchema,
      create(rpcErrors.ErrorInfoSchema, { reason: domain.code, domain: errorDomain, metadata: meta }),
    ),
  ];
  if (domain.details.length > 0) {
    const fieldViolations = domain.details.slice(0, statusBounds.violations).map(({ field, message }) => ({
      field: bounded(field, statusBounds.field),
      description: bounded(message, statusBounds.description),
    }));
    details.push(
      anyPack(rpcErrors.BadRequestSchema, create(rpcErrors.BadRequestSchema, { fieldViolations })),
    );
  }
  const status = create(rpcStatus.StatusSchema, { code, message, details });
  const metadata = new Metadata();
  metadata.set(detailsTrailer, Buffer.from(toBinary(rpcStatus.StatusSchema, status)));
  return { code, details: message, metadata };
}

/**
 * The DomainError a failed call stands for: the same class, code, message and details the server threw.
 * A down or slow backend (no details, UNAVAILABLE or DEADLINE_EXCEEDED) is an UnavailableError, which the
 * gateway answers with 503; transport messages (addresses, parser errors) are kept only as `cause`.
 */
export function toDomainError(error: unknown): DomainError {
  try {
    return domainErrorOf(error);
  } catch (unexpected) {
    // Mapping must never throw: it runs inside grpc-js's callback, where a throw would end the process.
    return withCause(internalError(), unexpected);
  }
}

function domainErrorOf(error: unknown): DomainError {
  if (error instanceof DomainError) return error;
  if (!isServiceError(error)) return withCause(internalError(), error);

  const status = statusDetailsOf(error.metadata);
  const info = status?.details
    .map((any) => unpack(any, rpcErrors.ErrorInfoSchema))
    .find((unpacked) => unpacked?.domain === errorDomain);
  const violations: FieldViolation[] = (status?.details ?? []).flatMap(
    (any) =>
      unpack(any, rpcErrors.BadRequestSchema)?.fieldViolations.map(({ field, description }) => ({
        field,
        message: description,
      })) ?? [],
  );
  if (info && isErrorCode(info.reason))
    return domainError(info.reason, status?.message ?? error.details, violations, info.metadata);

  let code = codeOfForeignStatus[error.code as Status] ?? 'internal_error';
  if (code === 'bad_request' && violations.length > 0) code = 'validation_error';
  if (code === 'service_unavailable') return withCause(new UnavailableError(), error);
  if (code === 'internal_error') return withCause(internalError(), error);
  return withCause(domainError(code, error.details, violations), error);
}

/** A detail of the given type, or undefined when it is another type or its bytes do not parse. */
function unpack<Desc extends DescMessage>(any: Any, schema: Desc): MessageShape<Desc> | undefined {
  try {
    return anyUnpack(any, schema);
  } catch {
    return undefined;
  }
}

function domainError(
  code: ErrorCode,
  message: string,
  details: FieldViolation[],
  meta: Record<string, string> = {},
): DomainError {
  // Runs DomainError's constructor with the canonical class as new.target: that class's prototype and name,
  // with exactly this message and these details, whatever arguments the subclass's constructor takes.
  return Reflect.construct(DomainError, [code, message, details, meta], classOf[code]) as DomainError;
}

function isServiceError(error: unknown): error is ServiceError {
  return error instanceof Error && typeof (error as ServiceError).code === 'number' && 'metadata' in error;
}

function statusDetailsOf(metadata: Metadata | undefined): rpcStatus.Status | undefined {
  const bytes = metadata?.get(detailsTrailer)[0];
  if (!(bytes instanceof Buffer)) return undefined;
  try {
    return fromBinary(rpcStatus.StatusSchema, bytes);
  } catch {
    return undefined; // A malformed trailer from a foreign server: fall back to the status code.
  }
}

function withCause<E extends Error>(error: E, cause: unknown): E {
  error.cause = cause;
  return error;
}

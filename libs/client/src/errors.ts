import type { components } from './gen/schema';

export type ErrorCode = components['schemas']['ErrorCode'];
export type ErrorDetail = components['schemas']['ErrorDetail'];
export type ErrorEnvelope = components['schemas']['ErrorEnvelope'];

/**
 * A Guard API answer outside 2xx, as an Error to throw: the envelope's `code`, `message` and `details`,
 * with the HTTP status, the `X-Request-Id` to quote and `Retry-After` in seconds (429, 503, a 409 on a
 * key still in use). An answer without the envelope (a proxy's HTML page) keeps its text in `body` and
 * gets the code `unknown`. Branch on `code` and `status`, never on `message`.
 */
export class GuardApiError extends Error {
  override readonly name = 'GuardApiError';
  readonly code: ErrorCode | 'unknown';
  readonly details: ErrorDetail[];
  readonly requestId: string | undefined;
  readonly retryAfterSeconds: number | undefined;

  constructor(
    readonly status: number,
    /** The parsed error body (the envelope), or its text when it was not JSON. */
    readonly body: unknown,
    headers: Headers = new Headers(),
  ) {
    const error = isErrorEnvelope(body) ? body.error : undefined;
    super(
      error?.message ?? `HTTP ${status}${typeof body === 'string' && body ? `: ${body.slice(0, 200)}` : ''}`,
    );
    this.code = error?.code ?? 'unknown';
    this.details = error?.details ?? [];
    this.requestId = headers.get('x-request-id') ?? undefined;
    const retryAfter = Number.parseInt(headers.get('retry-after') ?? '', 10);
    this.retryAfterSeconds = Number.isFinite(retryAfter) ? retryAfter : undefined;
  }
}

export function isErrorEnvelope(body: unknown): body is ErrorEnvelope {
  const error = (body as { error?: { code?: unknown; message?: unknown } } | null)?.error;
  return typeof error?.code === 'string' && typeof error.message === 'string';
}

/** What an openapi-fetch call resolves to: `data` on 2xx, `error` otherwise, and the response. */
interface Outcome {
  data?: unknown;
  error?: unknown;
  response: Response;
}

/** The data of a 2xx answer; `undefined` for an operation that answers none (`204`). */
type DataOf<O extends Outcome> = [Exclude<O['data'], undefined>] extends [never]
  ? undefined
  : Exclude<O['data'], undefined>;

/**
 * The data of a 2xx answer, or a GuardApiError thrown for any other status: for callers that would
 * rather throw than test `error` after each call.
 *
 *   const project = (await unwrap(client.GET('/v1/guard/projects/{id}', { params: { path: { id } } }))).data;
 */
export async function unwrap<O extends Outcome>(call: Promise<O> | O): Promise<DataOf<O>> {
  const { data, error, response } = await call;
  if (!response.ok) throw new GuardApiError(response.status, error, response.headers);
  return data as DataOf<O>;
}

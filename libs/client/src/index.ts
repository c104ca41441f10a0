import createClient, { type Client } from 'openapi-fetch';
import type { paths } from './gen/schema';

export type { components, operations, paths } from './gen/schema';
export {
  GuardApiError,
  isErrorEnvelope,
  unwrap,
  type ErrorCode,
  type ErrorDetail,
  type ErrorEnvelope,
} from './errors';
export { listAll, type ListItem, type ListParams, type ListPath } from './pages';
export { retryingFetch, type RetryNotice, type RetryOptions } from './retry';

/** The client createGuardClient returns: `GET`, `POST`, `PATCH`, `DELETE` typed by path. */
export type GuardClient = Client<paths>;

export interface GuardClientOptions {
  /** Base URL of the gateway, e.g. http://127.0.0.1:8080. */
  baseUrl: string;
  /** `cg_live_...`, sent as `Authorization: Bearer`. */
  apiKey?: string;
  /** Replaces the global fetch (tests, proxies, `retryingFetch` to wait out 429 and 503). */
  fetch?: typeof fetch;
  /** Sent with every request (e.g. `user-agent`); a call's own headers win. */
  headers?: Record<string, string>;
}

/** A typed client of the Guard REST API: paths, parameters, bodies and answers come from the OpenAPI document. */
export function createGuardClient(options: GuardClientOptions): GuardClient {
  return createClient<paths>({
    baseUrl: options.baseUrl.replace(/\/+$/, ''),
    headers: { ...options.headers, ...(options.apiKey ? { authorization: `Bearer ${options.apiKey}` } : {}) },
    fetch: options.fetch,
    bodySerializer: serializeBody,
  });
}

/**
 * JSON unless the call names another Content-Type: a cost-data upload sends its CSV text or bytes as
 * they are (`headers: { 'content-type': 'text/csv' }`).
 */
function serializeBody(body: unknown, headers?: Headers | Record<string, string | undefined>): unknown {
  const type = headers instanceof Headers ? headers.get('content-type') : undefined;
  if (type && !/^application\/json\b/i.test(type)) return body;
  return JSON.stringify(body);
}

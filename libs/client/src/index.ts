import createClient, { type Client } from 'openapi-fetch';
import type { paths } from './schema';

export type { components, operations, paths } from './schema';

export interface GuardClientOptions {
  /** Base URL of the gateway, e.g. http://127.0.0.1:8080. */
  baseUrl: string;
  /** `cg_live_...`, sent as `Authorization: Bearer`. */
  apiKey?: string;
  /** Replaces the global fetch (tests, proxies). */
  fetch?: typeof fetch;
}

/** A typed client of the Guard REST API: paths, parameters, bodies and answers come from the OpenAPI document. */
export function createGuardClient(options: GuardClientOptions): Client<paths> {
  return createClient<paths>({
    baseUrl: options.baseUrl.replace(/\/+$/, ''),
    headers: options.apiKey ? { authorization: `Bearer ${options.apiKey}` } : {},
    fetch: options.fetch,
  });
}

import { InvalidArgumentError, Option, type Command } from 'commander';
import { DomainError, UnavailableError, type ErrorCode } from '@costgov/errors';

/** Where the REST API is and the key that opens it: `--url`/`--api-key`, else COSTGOV_URL/COSTGOV_API_KEY. */
export interface ApiOptions {
  url: string;
  apiKey?: string;
}

export const defaultApiUrl = 'http://127.0.0.1:8080';

/** An http(s) base URL; anything else is a usage error rather than an unreachable gateway. */
function baseUrl(text: string): string {
  let url: URL | undefined;
  try {
    url = new URL(text);
  } catch {
    url = undefined;
  }
  if (!url || !['http:', 'https:'].includes(url.protocol))
    throw new InvalidArgumentError('Expected an http or https URL, like http://127.0.0.1:8080.');
  return text;
}

/** Adds `--url` and `--api-key` to a command that talks to the REST API. */
export function withApiOptions(command: Command, env: Record<string, string | undefined>): Command {
  return command
    .addOption(
      new Option('--url <url>', 'base URL of the API gateway (env COSTGOV_URL)')
        .argParser(baseUrl)
        .default(env.COSTGOV_URL || defaultApiUrl),
    )
    .addOption(
      new Option('--api-key <key>', 'API key, cg_live_… (env COSTGOV_API_KEY)').default(
        env.COSTGOV_API_KEY || undefined,
        env.COSTGOV_API_KEY ? '$COSTGOV_API_KEY' : undefined,
      ),
    );
}

export interface ApiReply<T> {
  data: T;
  meta?: { current_page: number; per_page: number; total_pages: number; total_count: number };
}

/** The error envelope's code as the DomainError the CLI reports (exit 1, message and field details). */
export function errorOf(status: number, body: unknown): DomainError {
  const error = (body as { error?: { code?: string; message?: string; details?: unknown } } | undefined)
    ?.error;
  const details = Array.isArray(error?.details)
    ? (error.details as { field?: unknown; message?: unknown }[]).map((d) => ({
        field: String(d.field ?? ''),
        message: String(d.message ?? ''),
      }))
    : [];
  const message = error?.message ?? `the API answered HTTP ${status}`;
  if (status === 503) return new UnavailableError(message);
  return new DomainError((error?.code as ErrorCode | undefined) ?? 'internal_error', message, details);
}

/** A JSON client of the Guard REST API: each call resolves to the parsed body or throws a DomainError. */
export function apiClient(options: ApiOptions) {
  if (!options.apiKey)
    throw new DomainError('unauthorized', 'an API key is needed: pass --api-key or set COSTGOV_API_KEY');
  const base = options.url.replace(/\/+$/, '');

  async function call<T>(method: string, path: string, body?: unknown): Promise<T> {
    const headers: Record<string, string> = { authorization: `Bearer ${options.apiKey}` };
    if (body !== undefined) headers['content-type'] = 'application/json';
    let response: Response;
    try {
      response = await fetch(`${base}${path}`, {
        method,
        headers,
        body: body === undefined ? undefined : JSON.stringify(body),
      });
    } catch (error) {
      const reason = (error as { cause?: { code?: string } }).cause?.code ?? (error as Error).message;
      throw new UnavailableError(
        `cannot reach the API at ${base} (${reason}); is the gateway running? (npm start, or set COSTGOV_URL)`,
      );
    }
    const text = await response.text();
    let parsed: unknown;
    try {
      parsed = text ? JSON.parse(text) : undefined;
    } catch {
      throw new DomainError(
        'internal_error',
        `the API answered HTTP ${response.status} with a body that is not JSON`,
      );
    }
    if (!response.ok) throw errorOf(response.status, parsed);
    return parsed as T;
  }

  return {
    get: <T>(path: string) => call<T>('GET', path),
    post: <T>(path: string, body: unknown) => call<T>('POST', path, body),
    patch: <T>(path: string, body: unknown) => call<T>('PATCH', path, body),
    delete: (path: string) => call<void>('DELETE', path),
  };
}

export type ApiClient = ReturnType<typeof apiClient>;

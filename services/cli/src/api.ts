import { InvalidArgumentError, Option, type Command } from 'commander';
import { createGuardClient } from '@costgov/client';
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

/**
 * A typed client of the Guard REST API (`@costgov/client`, generated from the OpenAPI document) for
 * the options' URL and key. A gateway that cannot be reached is an UnavailableError saying how to
 * start it; answers are read with `answer`.
 */
export function guardClient(options: ApiOptions): GuardClient {
  if (!options.apiKey)
    throw new DomainError('unauthorized', 'an API key is needed: pass --api-key or set COSTGOV_API_KEY');
  const base = options.url.replace(/\/+$/, '');
  const reaching: typeof fetch = async (input, init) => {
    try {
      return await fetch(input, init);
    } catch (error) {
      const reason = (error as { cause?: { code?: string } }).cause?.code ?? (error as Error).message;
      throw new UnavailableError(
        `cannot reach the API at ${base} (${reason}); is the gateway running? (npm start, or set COSTGOV_URL)`,
      );
    }
  };
  return createGuardClient({ baseUrl: base, apiKey: options.apiKey, fetch: reaching });
}

export type GuardClient = ReturnType<typeof createGuardClient>;

/** What a call of the typed client resolves to: the parsed body, or the error body and the response. */
interface Answer<T> {
  data?: T;
  error?: unknown;
  response: Response;
}

/** The body of a successful call; a refusal is thrown as the DomainError of its error envelope. */
export async function answer<T>(call: Promise<Answer<T>>): Promise<T> {
  let result: Answer<T>;
  try {
    result = await call;
  } catch (error) {
    if (error instanceof SyntaxError)
      throw new DomainError('internal_error', 'the API answered with a body that is not JSON');
    throw error;
  }
  if (!result.response.ok) throw errorOf(result.response.status, result.error);
  return result.data as T;
}

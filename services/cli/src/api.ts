import { InvalidArgumentError, Option, type Command } from 'commander';
import {
  createGuardClient,
  GuardApiError,
  listAll,
  unwrap,
  type GuardClient,
  type ListItem,
  type ListParams,
  type ListPath,
} from '@costgov/client';
import { DomainError, UnavailableError, type ErrorCode } from '@costgov/errors';
import { version } from '../package.json';
import { retryingApiFetch, type RetrySettings } from './retries';

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
 * start it; answers are read with `answer`, lists with `everyItem`. With `retry`, requests safe to
 * repeat wait out 429 and 503 (Retry-After) within its budget.
 */
export function guardClient(options: ApiOptions, retry?: RetrySettings): GuardClient {
  if (!options.apiKey)
    throw new DomainError('unauthorized', 'an API key is needed: pass --api-key or set COSTGOV_API_KEY');
  const base = options.url.replace(/\/+$/, '');
  const reaching: typeof fetch = async (input, init) => {
    try {
      return await fetch(input, init);
    } catch (error) {
      const cause = (error as { cause?: { code?: string; message?: string } }).cause;
      const reason = cause?.code ?? cause?.message ?? (error as Error).message;
      throw new UnavailableError(
        `cannot reach the API at ${base} (${reason}); is the gateway running? (npm start, or set COSTGOV_URL)`,
      );
    }
  };
  return createGuardClient({
    baseUrl: base,
    apiKey: options.apiKey,
    // Outside `reaching`, so that an unreachable gateway is reported at once rather than retried.
    fetch: retry ? retryingApiFetch(reaching, retry) : reaching,
    headers: { 'user-agent': `costgov-cli/${version}` },
  });
}

/**
 * The API's refusal as the DomainError the CLI reports (exit 1 with the message and field details), a
 * 503 as UnavailableError (exit 3); anything else as it is.
 */
function refusalOf(error: unknown): unknown {
  if (error instanceof SyntaxError)
    return new DomainError('internal_error', 'the API answered with a body that is not JSON');
  if (!(error instanceof GuardApiError)) return error;
  if (error.status === 503) return new UnavailableError(error.message);
  const code: ErrorCode = error.code === 'unknown' ? 'internal_error' : (error.code as ErrorCode);
  return new DomainError(code, error.message, error.details);
}

/** The body of a successful call; a refusal is thrown as the DomainError of its error envelope. */
export async function answer<O extends { data?: unknown; error?: unknown; response: Response }>(
  call: Promise<O>,
): ReturnType<typeof unwrap<O>> {
  try {
    return await unwrap(call);
  } catch (error) {
    throw refusalOf(error);
  }
}

/** How many more times `everyItem` reads a list of several pages that changed while it was read. */
export const listRereads = 3;

/**
 * Every item of a paged list (100 a page, until the last), refusals thrown as by `answer`.
 *
 * The API pages by offset: an item removed (a violation resolved) between two page reads shifts the
 * later ones back, and one is skipped, which would let a gate pass. So a list that took more than one
 * page is read again until two reads in a row hold the same ids; after `listRereads` more reads that
 * still differ it throws, and the caller reports that it could not check.
 */
export async function everyItem<P extends ListPath>(
  client: GuardClient,
  path: P,
  params: ListParams<P>,
): Promise<ListItem<P>[]> {
  let previous = await readList(client, path, params);
  if (previous.pages <= 1) return previous.items;
  for (let reread = 0; reread < listRereads; reread++) {
    const next = await readList(client, path, params);
    if (sameIds(previous.items, next.items)) return next.items;
    previous = next;
  }
  throw new Error(`the list ${path} changed while it was read; run again`);
}

/** One pass over the list with listAll, counting the pages it asked for. */
async function readList<P extends ListPath>(
  client: GuardClient,
  path: P,
  params: ListParams<P>,
): Promise<{ items: ListItem<P>[]; pages: number }> {
  let pages = 0;
  const counting: GuardClient = {
    ...client,
    GET: ((...args: unknown[]) => {
      pages++;
      return (client.GET as (...a: unknown[]) => unknown)(...args);
    }) as GuardClient['GET'],
  };
  const items: ListItem<P>[] = [];
  try {
    // A generic path defeats listAll's conditional rest parameter; the signature above keeps callers exact.
    for await (const item of (
      listAll as (c: GuardClient, p: P, q: ListParams<P>) => AsyncGenerator<ListItem<P>>
    )(counting, path, params))
      items.push(item);
  } catch (error) {
    throw refusalOf(error);
  }
  return { items, pages };
}

function sameIds(a: readonly unknown[], b: readonly unknown[]): boolean {
  const ids = (items: readonly unknown[]) => new Set(items.map((item) => (item as { id: string }).id));
  const left = ids(a);
  const right = ids(b);
  return left.size === right.size && [...left].every((id) => right.has(id));
}

export type { GuardClient };

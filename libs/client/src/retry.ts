/** Statuses that say "not now" rather than "no": the rate limit (429) and a backend that is down (503). */
const retriedStatuses = new Set([429, 503]);

/** One answer the retrying fetch waited out, or let through because the budget could not cover it. */
export interface RetryNotice {
  method: string;
  url: string;
  status: number;
  /** The answer's `X-Request-Id`, to quote in a report. */
  requestId: string | undefined;
  /** How long it waits before sending again (onWait), or would have had to (onGiveUp). */
  waitMs: number;
  /** What `Retry-After` asked, when it said anything usable; else the wait is the backoff. */
  retryAfterMs: number | undefined;
  /** Retries of this request before this answer (0 for the first answer). */
  retries: number;
  /** What all waits through this fetch add up to, this one included when it is waited. */
  spentMs: number;
  budgetMs: number;
}

export interface RetryOptions {
  /** What all waits through this fetch may add up to, across every request it sends; 0 retries nothing. */
  budgetMs: number;
  /** The longest single wait: a longer Retry-After is cut to it (the answer then says how much longer). */
  maxWaitMs?: number;
  /** The first wait when an answer has no usable Retry-After, doubled for each further one. */
  backoffMs?: number;
  /** What actually sends; the global fetch when absent (looked up at each call). */
  fetch?: typeof globalThis.fetch;
  /** Told before each wait, e.g. to say it on stderr. */
  onWait?(notice: RetryNotice): void;
  /** Told when a 429 or 503 is let through because the wait it asks does not fit in what is left. */
  onGiveUp?(notice: RetryNotice): void;
  /** Waits; rejects when the request's signal aborts (tests pass one that does not wait). */
  sleep?(ms: number, signal: AbortSignal): Promise<void>;
  /** The clock an HTTP-date Retry-After is measured against. */
  now?(): number;
}

/**
 * A fetch that waits out 429 and 503 and sends the request again, for requests that are safe to repeat:
 * GET and HEAD, and a POST that carries an `Idempotency-Key` (the API replays the first answer to a
 * repeat). Anything else, and any other status, is answered as it came. Each wait is what `Retry-After`
 * asks (whole seconds or an HTTP date), cut to `maxWaitMs`; without a usable one (absent, unreadable, 0)
 * it backs off from `backoffMs`, doubling. When a wait does not fit in what is left of `budgetMs` the
 * last answer is returned as it is, so the caller reports it as it would without retries.
 *
 *   createGuardClient({ baseUrl, apiKey, fetch: retryingFetch({ budgetMs: 120_000 }) })
 *
 * A POST body is held in memory until the request is done, so a streamed upload with a key should not
 * be sent through it (the cost-data upload ignores the key anyway).
 */
export function retryingFetch(options: RetryOptions): typeof globalThis.fetch {
  const { budgetMs, maxWaitMs = 30_000, backoffMs = 1_000 } = options;
  const sleep = options.sleep ?? abortableSleep;
  const now = options.now ?? Date.now;
  let spentMs = 0;

  return async (input, init) => {
    const send = options.fetch ?? globalThis.fetch;
    if (!safeToRepeat(input, init)) return send(input, init);
    const request = new Request(input, init);
    // openapi-fetch passes a Request and, at most, undici's extensions (a dispatcher): each try repeats them.
    const extension = input instanceof Request ? init : undefined;
    let backoffs = 0;
    for (let retries = 0; ; retries++) {
      const response = await send(request.clone(), extension);
      if (!retriedStatuses.has(response.status)) return response;
      const retryAfterMs = retryAfterOf(response.headers.get('retry-after'), now());
      const waitMs = Math.min(retryAfterMs ?? backoffMs * 2 ** backoffs++, maxWaitMs);
      const notice = (spent: number): RetryNotice => ({
        method: request.method,
        url: request.url,
        status: response.status,
        requestId: response.headers.get('x-request-id') ?? undefined,
        waitMs,
        retryAfterMs,
        retries,
        spentMs: spent,
        budgetMs,
      });
      if (spentMs + waitMs > budgetMs) {
        options.onGiveUp?.(notice(spentMs));
        return response;
      }
      // Counted before the wait, so requests waiting side by side share the budget rather than each own it.
      spentMs += waitMs;
      options.onWait?.(notice(spentMs));
      await response.body?.cancel().catch(() => undefined);
      await sleep(waitMs, request.signal);
    }
  };
}

/** Read from the arguments, not a Request made of them, which would take over a streamed body. */
function safeToRepeat(input: Parameters<typeof fetch>[0], init: RequestInit | undefined): boolean {
  const request = input instanceof Request ? input : undefined;
  const method = (init?.method ?? request?.method ?? 'GET').toUpperCase();
  if (method === 'GET' || method === 'HEAD') return true;
  const headers = init?.headers === undefined ? request?.headers : new Headers(init.headers);
  return method === 'POST' && headers?.has('idempotency-key') === true;
}

/**
 * Milliseconds a `Retry-After` asks: whole seconds, or an HTTP date from `now` (rounded up to a second);
 * undefined for none, a value it cannot read, or 0 (which would retry at once, again and again).
 */
export function retryAfterOf(value: string | null, now: number): number | undefined {
  if (value === null) return undefined;
  const text = value.trim();
  const ms = /^\d+$/.test(text) ? Number(text) * 1000 : Math.ceil((Date.parse(text) - now) / 1000) * 1000;
  return Number.isSafeInteger(ms) && ms > 0 ? ms : undefined;
}

function abortableSleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal.aborted) return reject(signal.reason);
    const abort = () => {
      clearTimeout(timer);
      reject(signal.reason);
    };
    const timer = setTimeout(() => {
      signal.removeEventListener('abort', abort);
      resolve();
    }, ms);
    signal.addEventListener('abort', abort, { once: true });
  });
}

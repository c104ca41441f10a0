import { retryingFetch, type RetryNotice } from '@costgov/client';
import { formatDuration } from './duration';

/** `--retry-for` when not given: long enough to ride out a shared key's minute or a backend's restart. */
export const defaultRetryBudgetMs = 120_000;
/** The longest single wait, whatever Retry-After asks: a gate should not sleep through a pipeline. */
export const maxRetryWaitMs = 30_000;

/** How a command's REST calls wait out 429 and 503 (see `retryingFetch` in @costgov/client). */
export interface RetrySettings {
  /** What all waits of the command may add up to (`--retry-for`); 0 retries nothing. */
  budgetMs: number;
  /** One line for people per wait, on stderr, so that it never mixes with the result on stdout. */
  say(line: string): void;
  /** Told, in words naming the status and request id, when a 429 or 503 is let through unretried. */
  gaveUp(reason: string): void;
}

/** `fetch` wrapped so that requests safe to repeat wait out 429 and 503 within the settings' budget. */
export function retryingApiFetch(fetch: typeof globalThis.fetch, settings: RetrySettings): typeof fetch {
  return retryingFetch({
    fetch,
    budgetMs: settings.budgetMs,
    maxWaitMs: maxRetryWaitMs,
    onWait: (notice) => settings.say(waitLine(notice)),
    onGiveUp: (notice) => settings.gaveUp(giveUpReason(notice)),
  });
}

const statusWords: Record<number, string> = { 429: 'rate limited', 503: 'service unavailable' };

/** `GET /v1/guard/findings answered 429 (rate limited, request req_1)`. */
function answered(notice: RetryNotice): string {
  const facts = [statusWords[notice.status], notice.requestId && `request ${notice.requestId}`];
  const { pathname } = new URL(notice.url);
  return `${notice.method} ${pathname} answered ${notice.status} (${facts.filter(Boolean).join(', ')})`;
}

const seconds = (ms: number) => `${Math.ceil(ms / 1000)} s`;

function waitLine(notice: RetryNotice): string {
  const why =
    notice.retryAfterMs === undefined
      ? 'no Retry-After'
      : notice.retryAfterMs > notice.waitMs
        ? `Retry-After ${seconds(notice.retryAfterMs)}, cut to ${seconds(notice.waitMs)}`
        : 'Retry-After';
  return `${answered(notice)}; retrying in ${seconds(notice.waitMs)} (${why})`;
}

function giveUpReason(notice: RetryNotice): string {
  if (notice.budgetMs === 0) return `${answered(notice)}, not retried (--retry-for 0)`;
  return `${answered(notice)}; gave up: ${seconds(notice.spentMs)} waited, and ${seconds(notice.waitMs)} more would pass --retry-for ${formatDuration(notice.budgetMs)}`;
}

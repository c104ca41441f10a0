import { lookup as dnsLookup, type LookupAddress, type LookupOptions } from 'node:dns';
import http from 'node:http';
import https from 'node:https';
import type { LookupFunction } from 'node:net';
import type { Logger } from '@costgov/log';
import {
  addressProblem,
  bareHost,
  hostExempt,
  hostProblem,
  metadataAddressProblem,
  type AddressPolicy,
} from './address-policy';

export interface OutboundRequest {
  url: string;
  headers: Record<string, string>;
  body: string;
}

/** What one attempt got: a status (0 when no answer came) and the first 1 KiB of the body, or the error. */
export interface AttemptResult {
  status: number;
  excerpt: string;
}

export type Send = (request: OutboundRequest) => Promise<AttemptResult>;

export const excerptBytes = 1024;

/** node:dns `lookup` with `all: true`. */
export type Resolve = (
  hostname: string,
  options: LookupOptions & { all: true },
  callback: (error: NodeJS.ErrnoException | null, addresses: LookupAddress[]) => void,
) => void;

/**
 * The excerpts of attempts that did not reach an endpoint. The team reads them through the deliveries
 * API, so they tell nothing of our network: no resolved address, and a name that does not resolve reads
 * like one that resolves to a non-public address. The details go to the server's log.
 */
export const refusedExcerpts = {
  address: 'target address is not public; refused',
  host: 'host not found or not public; refused',
  invalid: 'the request could not be made (invalid URL or header)',
} as const;

/** Raised by the lookup when a resolved address is refused; it carries the address for the log. */
class RefusedAddressError extends Error {
  constructor(
    readonly address: string,
    readonly problem: string,
  ) {
    super(problem);
  }
}

function notFound(hostname: string): NodeJS.ErrnoException {
  const error: NodeJS.ErrnoException = new Error(`getaddrinfo ENOTFOUND ${hostname}`);
  error.code = 'ENOTFOUND';
  return error;
}

/**
 * A DNS lookup that refuses the addresses `problemOf` names: the check applies to what the connection
 * will use, at connect time, so a name that resolves elsewhere on the next query (DNS rebinding) gains
 * nothing.
 */
function guardedLookup(resolve: Resolve, problemOf: (address: string) => string | undefined): LookupFunction {
  return (hostname, options: LookupOptions, callback) => {
    resolve(hostname, { ...options, all: true }, (error, addresses: LookupAddress[] | undefined) => {
      if (error) return callback(error, '', 0);
      // An empty answer is a name that does not resolve.
      if (!addresses || addresses.length === 0) return callback(notFound(hostname), '', 0);
      for (const { address } of addresses) {
        const problem = problemOf(address);
        if (problem) return callback(new RefusedAddressError(address, problem), '', 0);
      }
      if (options.all) return (callback as unknown as (e: null, a: LookupAddress[]) => void)(null, addresses);
      const first = addresses[0]!;
      callback(null, first.address, first.family);
    });
  };
}

/**
 * Reason for a failed request, for the attempt log the team reads: codes, never error messages (they
 * carry addresses and the URL).
 */
function reasonOf(error: unknown, timeoutMs: number, timedOut: boolean): string {
  if (timedOut) return `no answer within ${timeoutMs} ms`;
  if (error instanceof RefusedAddressError) return refusedExcerpts.host;
  const code = (error as NodeJS.ErrnoException | undefined)?.code;
  if (code === 'ENOTFOUND' || code === 'EAI_AGAIN' || code === 'EAI_NODATA') return refusedExcerpts.host;
  if (code === 'ECONNREFUSED') return 'connection refused';
  return code ? `connection failed (${code})` : 'connection failed';
}

/**
 * POSTs over node:http(s) with the SSRF guard (for a host it is lifted for, cloud metadata is still
 * refused, on the URL and on what the name resolves to), `timeoutMs` for the whole
 * exchange, no redirects followed (a 3xx is an answer like any other), and at most 1 KiB of the answer
 * read. Never rejects: every outcome is an AttemptResult.
 */
export function createSender({
  policy,
  timeoutMs,
  resolveHost = dnsLookup,
  logger,
}: {
  policy: AddressPolicy;
  timeoutMs: number;
  /** The resolver (node:dns lookup); tests give one that answers what they need. */
  resolveHost?: Resolve;
  /** Where refused targets are logged with their address (the attempt log does not show it). */
  logger?: Logger;
}): Send {
  const refused = (host: string, problem: string) =>
    logger?.warn({ host, reason: problem }, 'webhook target refused by the SSRF guard');
  return (request) =>
    new Promise<AttemptResult>((resolve) => {
      let url: URL;
      try {
        url = new URL(request.url);
      } catch {
        // ERR_INVALID_URL's message holds the whole URL, tokens included: neither it nor the URL is kept.
        return resolve({ status: 0, excerpt: refusedExcerpts.invalid });
      }
      const host = bareHost(url.hostname);
      const exempt = hostExempt(policy, host);
      // An IP literal is connected to without a lookup, so it is judged here.
      const literal = hostProblem(policy, host);
      if (literal) {
        refused(host, literal);
        return resolve({ status: 0, excerpt: refusedExcerpts.address });
      }

      let settled = false;
      let timedOut = false;
      const finish = (result: AttemptResult) => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        resolve(result);
      };
      const client = url.protocol === 'https:' ? https : http;
      let req: http.ClientRequest;
      try {
        req = client.request(url, {
          method: 'POST',
          headers: { ...request.headers, 'content-length': Buffer.byteLength(request.body).toString() },
          lookup: guardedLookup(resolveHost, exempt ? metadataAddressProblem : addressProblem),
          agent: false,
        });
      } catch {
        // A protocol node:http does not speak, a header it does not accept: a failed attempt like any other.
        return resolve({ status: 0, excerpt: refusedExcerpts.invalid });
      }
      const timer = setTimeout(() => {
        timedOut = true;
        req.destroy(new Error('timeout'));
      }, timeoutMs);
      req.on('error', (error) => {
        if (error instanceof RefusedAddressError) refused(host, error.problem);
        finish({ status: 0, excerpt: reasonOf(error, timeoutMs, timedOut) });
      });
      req.on('response', (res) => {
        const chunks: Buffer[] = [];
        let bytes = 0;
        const done = () => {
          const body = Buffer.concat(chunks).subarray(0, excerptBytes);
          finish({
            status: res.statusCode ?? 0,
            excerpt: body.toString('utf8').toWellFormed().replace(/\0/g, '\uFFFD'),
          });
          res.destroy();
        };
        res.on('data', (chunk: Buffer) => {
          chunks.push(chunk);
          bytes += chunk.length;
          if (bytes >= excerptBytes) done(); // the rest is not read
        });
        res.on('end', done);
        res.on('error', done);
        res.on('aborted', done);
      });
      req.end(request.body);
    });
}

import { lookup as dnsLookup, type LookupAddress, type LookupOptions } from 'node:dns';
import http from 'node:http';
import https from 'node:https';
import type { LookupFunction } from 'node:net';
import ipaddr from 'ipaddr.js';
import { addressProblem, bareHost, hostExempt, hostProblem, type AddressPolicy } from './address-policy';

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

/** Raised by the lookup when a resolved address is refused; its message is the attempt's excerpt. */
class RefusedAddressError extends Error {}

/**
 * A DNS lookup that refuses non-public addresses: the check applies to what the connection will use,
 * at connect time, so a name that resolves elsewhere on the next query (DNS rebinding) gains nothing.
 */
function guardedLookup(resolve: Resolve, guard: boolean): LookupFunction {
  return (hostname, options: LookupOptions, callback) => {
    resolve(hostname, { ...options, all: true }, (error, addresses: LookupAddress[]) => {
      if (error) return callback(error, '', 0);
      for (const { address } of guard ? addresses : []) {
        const problem = addressProblem(address);
        if (problem) return callback(new RefusedAddressError(problem), '', 0);
      }
      if (options.all) return (callback as unknown as (e: null, a: LookupAddress[]) => void)(null, addresses);
      const first = addresses[0]!;
      callback(null, first.address, first.family);
    });
  };
}

/** Readable reason for a failed request, for the attempt log. */
function reasonOf(error: unknown, timeoutMs: number, timedOut: boolean): string {
  if (timedOut) return `no answer within ${timeoutMs} ms`;
  if (error instanceof RefusedAddressError) return error.message;
  const cause = error as NodeJS.ErrnoException;
  if (cause.code === 'ENOTFOUND') return `host not found (${cause.message})`;
  if (cause.code === 'ECONNREFUSED') return `connection refused (${cause.message})`;
  return cause.message || String(error);
}

/**
 * POSTs over node:http(s) with the SSRF guard (unless lifted for the host), `timeoutMs` for the whole
 * exchange, no redirects followed (a 3xx is an answer like any other), and at most 1 KiB of the answer
 * read. Never rejects: every outcome is an AttemptResult.
 */
export function createSender({
  policy,
  timeoutMs,
  resolveHost = dnsLookup,
}: {
  policy: AddressPolicy;
  timeoutMs: number;
  /** The resolver (node:dns lookup); tests give one that answers what they need. */
  resolveHost?: Resolve;
}): Send {
  return (request) =>
    new Promise<AttemptResult>((resolve) => {
      const url = new URL(request.url);
      const host = bareHost(url.hostname);
      const exempt = hostExempt(policy, host);
      // An IP literal is connected to without a lookup, so it is judged here.
      const literal = exempt
        ? undefined
        : ipaddr.isValid(host)
          ? addressProblem(host)
          : hostProblem(policy, host);
      if (literal) return resolve({ status: 0, excerpt: literal });

      let settled = false;
      let timedOut = false;
      const finish = (result: AttemptResult) => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        resolve(result);
      };
      const client = url.protocol === 'https:' ? https : http;
      const req = client.request(url, {
        method: 'POST',
        headers: { ...request.headers, 'content-length': Buffer.byteLength(request.body).toString() },
        lookup: guardedLookup(resolveHost, !exempt),
        agent: false,
      });
      const timer = setTimeout(() => {
        timedOut = true;
        req.destroy(new Error('timeout'));
      }, timeoutMs);
      req.on('error', (error) => finish({ status: 0, excerpt: reasonOf(error, timeoutMs, timedOut) }));
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

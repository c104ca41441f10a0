import type { RequestOptions } from 'node:http';

/** What a secret is replaced by in span attributes (the word the semantic conventions use). */
export const redacted = 'REDACTED';

/**
 * A URL query with every value redacted (`token=abc&page=` → `token=REDACTED&page=`): the parameters a
 * request had, none of their values, since any of them may be a token or personal data. A part without
 * `=` is all value (`?3f9a...`, a bare token) and is redacted whole; empty values stay empty.
 */
export function redactQuery(query: string): string {
  return query
    .split('&')
    .map((part) => {
      const equals = part.indexOf('=');
      if (equals < 0) return part === '' ? part : redacted;
      return equals === part.length - 1 ? part : `${part.slice(0, equals + 1)}${redacted}`;
    })
    .join('&');
}

const defaultPorts: Record<string, string> = { 'http:': '80', 'https:': '443' };

/**
 * The `url.full` of an outgoing request as node:http was given it, with userinfo replaced by
 * `REDACTED:REDACTED` and every query value redacted (the semantic conventions' form for credentials;
 * stricter than their list of known secret parameters). Scheme, host, port and path are kept.
 */
export function outgoingUrl(options: RequestOptions): string {
  const protocol = options.protocol ?? 'http:';
  let host = options.hostname ?? options.host ?? 'localhost';
  let port = options.port === undefined || options.port === null ? undefined : String(options.port);
  // `host` may carry the port (`example.com:8080`, `[::1]:8080`) when `hostname` is not given.
  const hostWithPort = /^(\[[^\]]+\]|[^:]+):(\d+)$/.exec(host);
  if (hostWithPort) {
    host = hostWithPort[1]!;
    port ??= hostWithPort[2];
  }
  if (host.includes(':') && !host.startsWith('[')) host = `[${host}]`; // an IPv6 literal
  const portPart = port !== undefined && port !== defaultPorts[protocol] ? `:${port}` : '';
  const userinfo = options.auth ? `${redacted}:${redacted}@` : '';
  const path = options.path ?? '/';
  const queryAt = path.indexOf('?');
  const target = queryAt < 0 ? path : `${path.slice(0, queryAt)}?${redactQuery(path.slice(queryAt + 1))}`;
  return `${protocol}//${userinfo}${host}${portPart}${target}`;
}

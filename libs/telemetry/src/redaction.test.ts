import type { RequestOptions } from 'node:http';
import { describe, expect, it } from 'vitest';
import { outgoingUrl, redactQuery } from './redaction';

describe('a URL query in a span', () => {
  it.each([
    ['token=s3cret', 'token=REDACTED'],
    ['status=active&project_id=prj_1', 'status=REDACTED&project_id=REDACTED'],
    ['page=', 'page='],
    ['3f9a0c7e1b', 'REDACTED'], // a bare token: all value
    ['a=1&&b', 'a=REDACTED&&REDACTED'],
    ['filter=userName%20eq%20%22jane%40example.com%22', 'filter=REDACTED'],
    ['sig=a=b', 'sig=REDACTED'], // a value holding '='
    ['', ''],
  ])('%j keeps names, not values: %j', (query, expected) => {
    expect(redactQuery(query)).toBe(expected);
  });
});

describe("an outgoing request's url.full", () => {
  it.each<[string, RequestOptions, string]>([
    [
      'query values redacted',
      { protocol: 'https:', hostname: 'hooks.example.com', path: '/in?token=s3cret&x=1' },
      'https://hooks.example.com/in?token=REDACTED&x=REDACTED',
    ],
    [
      'credentials redacted',
      { protocol: 'http:', hostname: '127.0.0.1', port: 8080, path: '/hook', auth: 'user:pa55' },
      'http://REDACTED:REDACTED@127.0.0.1:8080/hook',
    ],
    [
      'default port left out',
      { protocol: 'https:', hostname: 'example.com', port: 443, path: '/' },
      'https://example.com/',
    ],
    ['no path', { hostname: 'example.com' }, 'http://example.com/'],
    ['IPv6 literal', { hostname: '::1', port: '9000', path: '/a?b=c' }, 'http://[::1]:9000/a?b=REDACTED'],
    ['port in host', { host: 'relay.internal:8443', path: '/x' }, 'http://relay.internal:8443/x'],
  ])('%s', (_case, options, expected) => {
    expect(outgoingUrl(options)).toBe(expected);
  });
});

import { Agent, request } from 'node:http';
import type { Answer } from './contract';

/** One concrete request, exactly as sent: the path is already percent-encoded, the body is bytes. */
export interface WireRequest {
  method: string;
  path: string;
  headers: Record<string, string>;
  body?: Buffer;
}

/**
 * Sends a request byte for byte (node:http, not fetch: fetch would normalise `..` in paths and refuse
 * some bodies), on kept-alive connections as a client would. A reset, a hang-up or no answer within
 * `timeoutMs` rejects: the caller counts that as a dropped connection.
 */
export function wireClient(baseUrl: string, timeoutMs = 15_000) {
  const url = new URL(baseUrl);
  const agent = new Agent({ keepAlive: true, maxSockets: 4 });
  const send = (wire: WireRequest): Promise<Answer> =>
    new Promise((resolve, reject) => {
      const req = request(
        {
          agent,
          host: url.hostname,
          port: url.port,
          method: wire.method,
          path: wire.path,
          headers: { ...wire.headers, ...(wire.body ? { 'content-length': String(wire.body.length) } : {}) },
        },
        (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (chunk: Buffer) => chunks.push(chunk));
          res.on('end', () =>
            resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks) }),
          );
          res.on('error', reject);
          res.on('aborted', () => reject(new Error('the response was cut off')));
        },
      );
      req.setTimeout(timeoutMs, () => req.destroy(new Error(`no answer within ${timeoutMs} ms`)));
      req.on('error', reject);
      req.end(wire.body);
    });
  return { send, close: () => agent.destroy() };
}

const shellQuote = (text: string) => `'${text.replace(/'/g, `'\\''`)}'`;

/** A curl command that sends the same request again (bodies that are not valid UTF-8 go as base64). */
export function curlOf(baseUrl: string, wire: WireRequest): string {
  const parts = ['curl -sS -i', `-X ${wire.method}`, shellQuote(`${baseUrl}${wire.path}`)];
  for (const [name, value] of Object.entries(wire.headers))
    parts.push(`-H ${shellQuote(`${name}: ${value}`)}`);
  if (!wire.body) return parts.join(' ');
  const text = wire.body.toString('utf8');
  const printable =
    Buffer.from(text, 'utf8').equals(wire.body) &&
    ![...text].some((char) => char < ' ' && char !== '\n' && char !== '\r' && char !== '\t');
  if (wire.body.length > 2_000) {
    const head = printable
      ? JSON.stringify(text.slice(0, 300))
      : wire.body.subarray(0, 300).toString('base64');
    return `${parts.join(' ')} --data-binary @body  # ${wire.body.length} bytes, starting ${head}${printable ? '' : ' (base64)'}`;
  }
  if (printable) return `${parts.join(' ')} --data-binary ${shellQuote(text)}`;
  return `printf %s ${shellQuote(wire.body.toString('base64'))} | base64 -d | ${parts.join(' ')} --data-binary @-`;
}

/** Percent-encodes a path segment or query value; a lone surrogate goes as its (invalid) UTF-8-style bytes. */
export function percentEncode(text: string): string {
  let out = '';
  for (const char of text) {
    const code = char.codePointAt(0)!;
    if (code >= 0xd800 && code <= 0xdfff) {
      out += [0xe0 | (code >> 12), 0x80 | ((code >> 6) & 0x3f), 0x80 | (code & 0x3f)]
        .map((byte) => `%${byte.toString(16).toUpperCase()}`)
        .join('');
    } else
      out += encodeURIComponent(char).replace(
        /[!'()*]/g,
        (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`,
      );
  }
  return out;
}

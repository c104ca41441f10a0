import { createReadStream, type ReadStream } from 'node:fs';
import { pipeline, Readable } from 'node:stream';
import { createGunzip, gzipSync } from 'node:zlib';
import { DomainError, UnavailableError } from '@costgov/errors';
import type { components } from '@costgov/client';
import { errorOf, type ApiOptions } from './api';
import type { Progress } from './progress';

/** The upload's answer, as `POST /v1/guard/connections/{id}/cost-data` sends it. */
export type IngestSummaryJson = components['schemas']['IngestSummary'];

/** `.csv.gz` (or any `.gz`) goes as application/gzip, anything else as text/csv. */
export const contentTypeOf = (file: string): string =>
  file.toLowerCase().endsWith('.gz') ? 'application/gzip' : 'text/csv';

/** One file of an upload, with its size in bytes. */
export interface UploadPart {
  path: string;
  size: number;
}

/** A part's text (gunzipped for `.gz`); a read or gzip error ends the iteration with it. */
export function partText(part: UploadPart): AsyncIterable<Buffer> {
  const source = createReadStream(part.path, { highWaterMark: 64 * 1024 });
  if (contentTypeOf(part.path) !== 'application/gzip') return source;
  const gunzip = createGunzip();
  pipeline(source, gunzip, () => undefined); // an error reaches the reader through gunzip
  return gunzip;
}

/** The line break the part's first line ends with: `\r\n` or `\n`. */
async function lineEndOf(part: UploadPart): Promise<string> {
  let last = 0;
  for await (const chunk of partText(part)) {
    const at = chunk.indexOf(10);
    if (at >= 0) return (at > 0 ? chunk[at - 1] : last) === 13 ? '\r\n' : '\n';
    if (chunk.length > 0) last = chunk[chunk.length - 1]!;
  }
  return '\n';
}

/** How the parts go as one body: its type, what goes between two parts, its length in bytes. */
export interface UploadBody {
  parts: readonly UploadPart[];
  contentType: string;
  separator: Buffer;
  size: number;
}

/**
 * The body of an upload of `parts` (all plain or all gzip): the parts one after another, each with its
 * header (the API skips a repeated header), a line break between them in the first part's own style
 * (`\r\n` or `\n`: the API reads a file's lines by its first line's break), a gzip member of it
 * between gzip parts. The break ends a last line without one, or is a blank line, which is skipped.
 */
export async function uploadBodyOf(parts: readonly UploadPart[]): Promise<UploadBody> {
  const contentType = contentTypeOf(parts[0]!.path);
  // An unreadable part fails the upload itself, with its own error.
  const lineEnd = parts.length > 1 ? await lineEndOf(parts[0]!).catch(() => '\n') : '\n';
  const separator = contentType === 'application/gzip' ? gzipSync(lineEnd) : Buffer.from(lineEnd);
  const size =
    parts.reduce((total, part) => total + part.size, 0) + separator.byteLength * (parts.length - 1);
  return { parts, contentType, separator, size };
}

/**
 * Streams one file, or the parts of one export as one body (uploadBodyOf), to the REST API, read 64 KiB
 * at a time as the connection takes it (fetch pulls the next chunk only when the last is sent), so
 * memory stays flat whatever the size; billing periods the parts share are stored whole. Resolves with
 * the summary; a refusal is the DomainError of the error envelope, with its row and column details.
 */
export async function uploadFile(
  options: ApiOptions,
  connectionId: string,
  { parts, contentType, separator, size: sizeBytes }: UploadBody,
  progress: Progress,
): Promise<IngestSummaryJson> {
  if (!options.apiKey)
    throw new DomainError('unauthorized', 'an API key is needed: pass --api-key or set COSTGOV_API_KEY');
  const base = options.url.replace(/\/+$/, '');
  let source: ReadStream | undefined;
  let sent = 0;
  let finished = false;
  const finish = () => {
    if (!finished) progress.finish();
    finished = true;
  };
  async function* chunks(): AsyncGenerator<Buffer> {
    for (const [index, part] of parts.entries()) {
      if (index > 0) yield separator;
      source = createReadStream(part.path, { highWaterMark: 64 * 1024 });
      yield* source as AsyncIterable<Buffer>;
    }
  }
  async function* counted(): AsyncGenerator<Buffer> {
    for await (const chunk of chunks()) {
      sent += chunk.byteLength;
      progress.advance(chunk.byteLength);
      // fetch stops pulling once Content-Length bytes are out, so the end of the file is told here.
      if (sent >= sizeBytes) finish();
      yield chunk;
    }
    finish();
  }
  let response: Response;
  try {
    response = await fetch(`${base}/v1/guard/connections/${encodeURIComponent(connectionId)}/cost-data`, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${options.apiKey}`,
        'content-type': contentType,
        // Lets the gateway refuse a file over its limit before a byte of it is sent.
        'content-length': String(sizeBytes),
      },
      body: Readable.toWeb(Readable.from(counted())) as ReadableStream<Uint8Array>,
      duplex: 'half',
    } as RequestInit);
  } catch (error) {
    const cause = (error as { cause?: { code?: string; message?: string } }).cause;
    if (cause?.code === 'ENOENT' || cause?.code === 'EACCES')
      throw new DomainError('bad_request', cause.message!);
    const reason = cause?.code ?? cause?.message ?? (error as Error).message;
    throw new UnavailableError(
      `cannot reach the API at ${base} (${reason}); is the gateway running? (npm start, or set COSTGOV_URL)`,
    );
  } finally {
    source?.destroy(); // an early answer (a refusal) leaves the rest of the file unread
    finish();
  }
  const text = await response.text();
  let body: unknown;
  try {
    body = text ? JSON.parse(text) : undefined;
  } catch {
    throw new DomainError(
      'internal_error',
      `the API answered HTTP ${response.status} with a body that is not JSON`,
    );
  }
  if (!response.ok) throw errorOf(response.status, body);
  return (body as components['schemas']['IngestSummaryEnvelope']).data;
}

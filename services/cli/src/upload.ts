import { createReadStream, type ReadStream } from 'node:fs';
import { Readable } from 'node:stream';
import { gzipSync } from 'node:zlib';
import { DomainError, UnavailableError } from '@costgov/errors';
import type { components } from '@costgov/client';
import { errorOf, type ApiOptions } from './api';
import type { Progress } from './progress';

/** The upload's answer, as `POST /v1/guard/connections/{id}/cost-data` sends it. */
export type IngestSummaryJson = components['schemas']['IngestSummary'];

/** `.csv.gz` (or any `.gz`) goes as application/gzip, anything else as text/csv. */
export const contentTypeOf = (file: string): string =>
  file.toLowerCase().endsWith('.gz') ? 'application/gzip' : 'text/csv';

/** What separates two parts of one upload: a line break (a gzip member of one for gzip parts). */
const separatorOf = (contentType: string): Buffer =>
  contentType === 'application/gzip' ? gzipSync('\n') : Buffer.from('\n');

/** One file of an upload, with its size in bytes. */
export interface UploadPart {
  path: string;
  size: number;
}

/**
 * Streams one file, or the parts of one export (all plain or all gzip), to the REST API as one body,
 * read 64 KiB at a time as the connection takes it (fetch pulls the next chunk only when the last is
 * sent), so memory stays flat whatever the size. Parts go one after another, each with its header
 * (the API skips a repeated header), a line break between them (a blank line, skipped too), so that the
 * billing periods they share are stored whole. Resolves with the summary; a refusal is the DomainError
 * of the error envelope, with its row and column details.
 */
export async function uploadFile(
  options: ApiOptions,
  connectionId: string,
  parts: readonly UploadPart[],
  progress: Progress,
): Promise<IngestSummaryJson> {
  if (!options.apiKey)
    throw new DomainError('unauthorized', 'an API key is needed: pass --api-key or set COSTGOV_API_KEY');
  const base = options.url.replace(/\/+$/, '');
  const contentType = contentTypeOf(parts[0]!.path);
  const separator = separatorOf(contentType);
  const sizeBytes =
    parts.reduce((total, part) => total + part.size, 0) + separator.byteLength * (parts.length - 1);
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

import { createReadStream } from 'node:fs';
import { Readable } from 'node:stream';
import { DomainError, UnavailableError } from '@costgov/errors';
import type { components } from '@costgov/client';
import { errorOf, type ApiOptions } from './api';
import type { Progress } from './progress';

/** The upload's answer, as `POST /v1/guard/connections/{id}/cost-data` sends it. */
export type IngestSummaryJson = components['schemas']['IngestSummary'];

/** `.csv.gz` (or any `.gz`) goes as application/gzip, anything else as text/csv. */
export const contentTypeOf = (file: string): string =>
  file.toLowerCase().endsWith('.gz') ? 'application/gzip' : 'text/csv';

/**
 * Streams one file to the REST API, read 64 KiB at a time as the connection takes it (fetch pulls the
 * next chunk only when the last is sent), so memory stays flat whatever the file's size. Resolves with
 * the summary; a refusal is the DomainError of the error envelope, with its row and column details.
 */
export async function uploadFile(
  options: ApiOptions,
  connectionId: string,
  file: string,
  sizeBytes: number,
  progress: Progress,
): Promise<IngestSummaryJson> {
  if (!options.apiKey)
    throw new DomainError('unauthorized', 'an API key is needed: pass --api-key or set COSTGOV_API_KEY');
  const base = options.url.replace(/\/+$/, '');
  const source = createReadStream(file, { highWaterMark: 64 * 1024 });
  let sent = 0;
  let finished = false;
  const finish = () => {
    if (!finished) progress.finish();
    finished = true;
  };
  async function* counted(): AsyncGenerator<Buffer> {
    for await (const chunk of source as AsyncIterable<Buffer>) {
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
        'content-type': contentTypeOf(file),
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
    source.destroy(); // an early answer (a refusal) leaves the rest of the file unread
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

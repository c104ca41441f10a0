import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import type { components } from '@costgov/client';
import { answer, type GuardClient } from '../api';

type Scan = components['schemas']['Scan'];

export interface ScanWait {
  /** Give up (and fail the check) when the scan has not finished by then. */
  timeoutMs: number;
  /** Between two reads of the scan. */
  intervalMs: number;
  /** One line of progress for people: on stderr, never mixed with the result. */
  progress(line: string): void;
}

const plural = (n: number, noun: string) => `${n} ${noun}${n === 1 ? '' : 's'}`;

const stateOf = (scan: Scan) =>
  scan.status === 'completed'
    ? `completed: ${scan.resources_scanned} resources, ${scan.findings_count} findings, ${plural(scan.credits_used, 'credit')}`
    : scan.status;

/**
 * Starts a scan of the project (`POST /v1/guard/scans`: the key needs `scans:write`, the team a credit
 * per connection) and reads it until it completes, so the check sees today's findings. A scan that
 * fails, ends in any status but `completed`, or does not finish within the timeout, is thrown: the
 * gate could not check. The POST carries an Idempotency-Key, so that a retry after a 429 or 503 starts
 * (and charges) one scan, not two.
 */
export async function scanAndWait(
  client: GuardClient,
  projectId: string,
  wait: ScanWait,
  idempotencyKey: string = randomUUID(),
): Promise<Scan> {
  let scan = (
    await answer(
      client.POST('/v1/guard/scans', {
        params: { header: { 'Idempotency-Key': idempotencyKey } },
        body: { project_id: projectId },
      }),
    )
  ).data;
  wait.progress(`scan ${scan.id}: ${stateOf(scan)}`);
  const deadline = Date.now() + wait.timeoutMs;
  while (scan.status === 'pending' || scan.status === 'running') {
    if (Date.now() >= deadline)
      throw new Error(
        `scan ${scan.id} did not finish within ${Math.round(wait.timeoutMs / 1000)} s (still ${scan.status}); raise --scan-timeout`,
      );
    await sleep(Math.min(wait.intervalMs, Math.max(0, deadline - Date.now())));
    const before = scan.status;
    scan = (await answer(client.GET('/v1/guard/scans/{id}', { params: { path: { id: scan.id } } }))).data;
    if (scan.status !== before) wait.progress(`scan ${scan.id}: ${stateOf(scan)}`);
  }
  if (scan.status === 'failed') throw new Error(`scan ${scan.id} failed: ${scan.error ?? 'no reason given'}`);
  // Only a completed scan means today's findings are there to read; a status this CLI does not know
  // (the API's field is a plain string to it) is not taken for success.
  if (scan.status !== 'completed')
    throw new Error(`scan ${scan.id} ended with status '${String(scan.status)}', not completed`);
  return scan;
}

import { create } from '@bufbuild/protobuf';
import type { Outbox } from '@costgov/bus';
import { events } from '@costgov/contracts';
import type { Queryable } from '@costgov/db';

/** The scan a shard or merge request names. */
interface ScanOfRequest {
  scanId: string;
  teamId: string;
  projectId: string;
}

/**
 * `scanner.scan.requested` for a scan to plan, in the caller's transaction: queued when the scan is
 * created, and again by the reconciler when a scan stays pending (its message was lost).
 */
export async function requestScan(
  outbox: Outbox,
  tx: Queryable,
  scan: ScanOfRequest & { connectionIds: string[]; credits: number },
): Promise<void> {
  await outbox.addMessage(tx, {
    type: 'scanner.scan.requested',
    subject: scan.scanId,
    schema: events.ScanRequestedSchema,
    message: create(events.ScanRequestedSchema, scan),
  });
}

/**
 * `scanner.scan_shard.requested` for one shard of a planned scan, in the caller's transaction: queued
 * when the scan is planned, and again by the reconciler when a shard's message was lost.
 */
export async function requestShard(
  outbox: Outbox,
  tx: Queryable,
  scan: ScanOfRequest & { shardIndex: number; shardCount: number },
): Promise<void> {
  await outbox.addMessage(tx, {
    type: 'scanner.scan_shard.requested',
    subject: scan.scanId,
    schema: events.ScanShardRequestedSchema,
    message: create(events.ScanShardRequestedSchema, scan),
  });
}

/**
 * `scanner.scan_merge.requested` for a scan whose shards are all stored, in the caller's transaction:
 * queued with the last shard, and again by the reconciler when nobody took the merge.
 */
export async function requestMerge(
  outbox: Outbox,
  tx: Queryable,
  scan: ScanOfRequest & { shardCount: number },
): Promise<void> {
  await outbox.addMessage(tx, {
    type: 'scanner.scan_merge.requested',
    subject: scan.scanId,
    schema: events.ScanMergeRequestedSchema,
    message: create(events.ScanMergeRequestedSchema, scan),
  });
}

import { create } from '@bufbuild/protobuf';
import type { Outbox } from '@costgov/bus';
import { events } from '@costgov/contracts';
import type { Queryable } from '@costgov/db';
import type { ScanRow } from './scan';

/** `scanner.scan.completed` or `scanner.scan.failed` for a scan that has just finished, in its transaction. */
export async function publishScanFinished(outbox: Outbox, tx: Queryable, scan: ScanRow): Promise<void> {
  await outbox.addMessage(tx, {
    type: `scanner.scan.${scan.status === 'completed' ? 'completed' : 'failed'}`,
    subject: scan.id,
    schema: events.ScanFinishedSchema,
    message: create(events.ScanFinishedSchema, {
      scanId: scan.id,
      teamId: scan.team_id,
      projectId: scan.project_id,
      status: scan.status,
      resourcesScanned: scan.resources_scanned,
      findingsCount: scan.findings_count,
      error: scan.error ?? '',
    }),
  });
}

/** Longest `error` kept on a failed scan. */
export const maxErrorChars = 500;

import { decodeEvent, type CloudEvent } from '@costgov/bus';
import { events } from '@costgov/contracts';
import type { ScanCredits } from './scan-credits';

/**
 * Gives a failed scan's credits back on `scanner.scan.failed`. The event is written with the failure, so
 * the refund happens even if the process dies right after; identity's ledger refunds a scan once, so a
 * redelivery (or identity answering late) never pays twice. Identity down: the event comes back later.
 */
export function refundFailedScan(credits: ScanCredits) {
  return async (_tx: unknown, event: CloudEvent): Promise<void> => {
    const { scanId, teamId } = decodeEvent(events.ScanFinishedSchema, event);
    await credits.refund(teamId, scanId);
  };
}

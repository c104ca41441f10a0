import type { ScanData } from './types';
import { connectionEnd, coveredDays, goneAfterDays, perMonth } from './window';

const dayMs = 86_400_000;

/**
 * What each connection's commitments (savings plans, reservations) leave unused a month: the Unused
 * rows' cost per covered day of each commitment times 30.44 (as commitments-unused counts it), summed
 * per connection; a commitment last billed more than `goneAfterDays` before its connection's data ends
 * has expired and leaves nothing. Unused rows whose commitment the data does not name count through the
 * resource that carries them.
 *
 * That money is already paid and already counted as commitments-unused's savings: usage moved onto the
 * commitment saves it once, and modernising usage the commitment covers only frees more of it.
 */
export function unusedCommitmentByConnection(data: ScanData, now?: Date): Map<string, number> {
  const unused = new Map<string, number>();
  const add = (connectionId: string, amount: number) =>
    unused.set(connectionId, (unused.get(connectionId) ?? 0) + amount);
  const named = new Set<string>();
  for (const commitment of data.commitments) {
    named.add(`${commitment.connectionId}/${commitment.commitmentDiscountId}`);
    if (commitment.unusedCost <= 0) continue;
    const gap = connectionEnd(data, commitment.connectionId, now) - Date.parse(commitment.lastSeen);
    if (gap > goneAfterDays * dayMs) continue;
    add(commitment.connectionId, perMonth(commitment.unusedCost, coveredDays(commitment)));
  }
  for (const resource of data.resources) {
    if (resource.unusedCommitmentCost <= 0) continue;
    if (
      named.has(`${resource.connectionId}/${resource.commitmentDiscountId}`) ||
      named.has(`${resource.connectionId}/${resource.resourceId}`)
    )
      continue;
    const gap = connectionEnd(data, resource.connectionId, now) - Date.parse(resource.lastSeen);
    if (gap > goneAfterDays * dayMs) continue;
    add(resource.connectionId, perMonth(resource.unusedCommitmentCost, coveredDays(resource)));
  }
  return unused;
}

import type { ScanAggregates, ScanResource } from './types';
import { connectionEnd, coveredDays, goneAfterDays, perMonth } from './window';

const dayMs = 86_400_000;

/**
 * What each connection's commitments (savings plans, reservations) leave unused a month: the Unused
 * rows' cost per covered day of each commitment times 30.44 (as commitments-unused counts it), summed
 * per connection; a commitment last billed more than `goneAfterDays` before its connection's data ends
 * has expired and leaves nothing. Unused rows whose commitment the data does not name count through the
 * resource that carries them: `unnamedUnused` (per connection, `unnamedUnusedOf` of every resource of
 * the scan, added up page by page in the scan's summary).
 *
 * That money is already paid and already counted as commitments-unused's savings: usage moved onto the
 * commitment saves it once, and modernising usage the commitment covers only frees more of it.
 */
export function unusedCommitmentByConnection(
  data: ScanAggregates,
  unnamedUnused: Record<string, number>,
  now?: Date,
): Map<string, number> {
  const unused = new Map<string, number>();
  for (const commitment of data.commitments) {
    if (commitment.unusedCost <= 0) continue;
    if (gone(data, commitment, now)) continue;
    unused.set(
      commitment.connectionId,
      (unused.get(commitment.connectionId) ?? 0) + perMonth(commitment.unusedCost, coveredDays(commitment)),
    );
  }
  for (const [connectionId, amount] of Object.entries(unnamedUnused))
    unused.set(connectionId, (unused.get(connectionId) ?? 0) + amount);
  return unused;
}

const known = new WeakMap<ScanAggregates, Map<string, number>>();

/**
 * Whether the connection's commitments may leave something unused, from the aggregates alone: its named
 * commitments' unused part is known; the part of rows naming no commitment can only be above 0 when the
 * connection has Unused rows at all (`unusedCommitmentRecords`; unknown counts as maybe).
 */
export function mayLeaveUnused(data: ScanAggregates, connectionId: string, now?: Date): boolean {
  let named = known.get(data);
  if (!named) {
    named = unusedCommitmentByConnection(data, {}, now);
    known.set(data, named);
  }
  if ((named.get(connectionId) ?? 0) > 0) return true;
  const totals = data.totals.find((t) => t.connectionId === connectionId);
  return totals?.unusedCommitmentRecords === undefined || totals.unusedCommitmentRecords > 0;
}

/** Per connection: the monthly unused commitment `resources` carry whose commitment the data does not name. */
export function unnamedUnusedOf(
  resources: readonly ScanResource[],
  data: ScanAggregates,
  now?: Date,
): Record<string, number> {
  const named = new Set(data.commitments.map((c) => `${c.connectionId}/${c.commitmentDiscountId}`));
  const unused: Record<string, number> = {};
  for (const resource of resources) {
    if (resource.unusedCommitmentCost <= 0) continue;
    if (
      named.has(`${resource.connectionId}/${resource.commitmentDiscountId}`) ||
      named.has(`${resource.connectionId}/${resource.resourceId}`)
    )
      continue;
    if (gone(data, resource, now)) continue;
    unused[resource.connectionId] =
      (unused[resource.connectionId] ?? 0) + perMonth(resource.unusedCommitmentCost, coveredDays(resource));
  }
  return unused;
}

const gone = (
  data: ScanAggregates,
  item: { connectionId: string; lastSeen: string },
  now: Date | undefined,
) => connectionEnd(data, item.connectionId, now) - Date.parse(item.lastSeen) > goneAfterDays * dayMs;

import { unnamedUnusedOf } from './commitment-room';
import { oldFamilies, pricedOf } from './instance-types';
import type { PeerPrices, ScanAggregates, ScanResource, ScanSummary } from './types';

/**
 * The whole scan's summary (types.ts ScanSummary) as sums that add up in any order: each page of each
 * shard contributes its resources' part, and the parts are merged once at the end of the scan. Sums of
 * floating-point numbers in another order may differ in their last bits, never in a rounded figure.
 */
export const emptySummary = (): ScanSummary => ({ unnamedUnused: {}, peers: {} });

/** The part of the summary `resources` (any page of the scan) contribute. */
export function summaryOf(resources: readonly ScanResource[], data: ScanAggregates, now?: Date): ScanSummary {
  const peers: Record<string, PeerPrices> = {};
  for (const resource of resources) {
    const priced = pricedOf(resource);
    if (!priced || oldFamilies.has(`${priced.classLetters}${priced.generation}`)) continue;
    for (const basis of ['list', 'effective'] as const) {
      const price = priced[basis];
      if (price === undefined) continue;
      const peer: PeerPrices = {
        classLetters: priced.classLetters,
        generation: priced.generation,
        region: priced.region,
        basis,
        sum: price,
        count: 1,
        family: priced.family,
        familyOf: {
          effectiveCost: resource.effectiveCost,
          connectionId: resource.connectionId,
          resourceId: resource.resourceId,
        },
        types: [priced.type],
      };
      const key = peerKey(peer);
      peers[key] = peers[key] ? mergePeers(peers[key], peer) : peer;
    }
  }
  return { unnamedUnused: unnamedUnusedOf(resources, data, now), peers };
}

export const peerKey = (peer: Pick<PeerPrices, 'classLetters' | 'generation' | 'region' | 'basis'>) =>
  `${peer.classLetters}|${peer.generation}|${peer.region}|${peer.basis}`;

/** Costliest first, then by connection and resource id: the order the rules have always read resources in. */
const before = (a: PeerPrices['familyOf'], b: PeerPrices['familyOf']) =>
  a.effectiveCost !== b.effectiveCost
    ? a.effectiveCost > b.effectiveCost
    : a.connectionId !== b.connectionId
      ? a.connectionId < b.connectionId
      : a.resourceId < b.resourceId;

function mergePeers(a: PeerPrices, b: PeerPrices): PeerPrices {
  const first = before(b.familyOf, a.familyOf) ? b : a;
  return {
    ...a,
    sum: a.sum + b.sum,
    count: a.count + b.count,
    family: first.family,
    familyOf: first.familyOf,
    types: [...new Set([...a.types, ...b.types])].sort(),
  };
}

/** Two parts of the summary as one. */
export function mergeSummaries(a: ScanSummary, b: ScanSummary): ScanSummary {
  const unnamedUnused = { ...a.unnamedUnused };
  for (const [connectionId, amount] of Object.entries(b.unnamedUnused))
    unnamedUnused[connectionId] = (unnamedUnused[connectionId] ?? 0) + amount;
  const peers = { ...a.peers };
  for (const [key, peer] of Object.entries(b.peers))
    peers[key] = peers[key] ? mergePeers(peers[key], peer) : peer;
  return { unnamedUnused, peers };
}

import { defineRule } from './define';
import { mayLeaveUnused, unusedCommitmentByConnection } from './commitment-room';
import { type Basis, oldFamilies, pricedOf } from './instance-types';
import type { ScanResource } from './types';
import { coveredDays, money, monthlyCostOf, projectedDays, resourceTypeOf } from './window';

/** gp2 volumes (gp3 costs 20% less per GB) and magnetic (standard) volumes. */
const gp2Volume = /\bgp2\b/i;
const magneticVolume = /\bmagnetic\b/i;
/**
 * When the data holds no current-generation instance of the same class to compare with: the share a
 * move typically saves, from AWS us-east-1 Linux on-demand list prices of the same size (t2.medium
 * 0.0464 vs t3.medium 0.0416; m4.large 0.10 vs m5.large 0.096; c4.large 0.10 vs c5.large 0.085; ...).
 * 0 where the successor is not cheaper per hour (GPU and memory families): the move is for speed.
 */
const typicalShare: Record<string, number> = {
  t1: 0.48,
  t2: 0.1,
  m1: 0.45,
  m2: 0,
  m3: 0.28,
  m4: 0.04,
  c1: 0.3,
  c3: 0.19,
  c4: 0.15,
  r3: 0.24,
  r4: 0.05,
  i2: 0.63,
  d2: 0.28,
  g2: 0,
  g3: 0,
  p2: 0,
  x1: 0,
  gp2: 0.2,
  magnetic: 0,
};

/** Runs under a commitment discount (its costliest charge priced Committed or covered by one). */
const isCommitted = (resource: ScanResource): boolean =>
  /^committed$/i.test(resource.pricingCategory) || /^used$/i.test(resource.commitmentDiscountStatus);

/** Instances and volumes of a family the provider has superseded (read from the charge description). */
export const previousGeneration = defineRule({
  id: 'compute-previous-generation',
  severity: 'low',
  category: 'compute',
  title: 'Previous-generation instance or volume family',
  description:
    'The resource runs on a superseded instance family (t2, m4, c4, r4, g3, ...) or volume type (gp2, magnetic).',
  recommendation:
    'Move it to the current generation (e.g. t3/t4g, m6i/m7g, g5; gp3 volumes): usually cheaper and faster.',
  needs: "The instance type or volume type in the resource's charge description; any number of days.",
  savings:
    'Its cost per covered day (first to last seen) times 30.44, times the share by which the closest newer family of the same class observed in the data in the same region costs less per hour and normalised size, prices compared on one basis (list with list when both have ListCost, else effective with effective); without one in the data, a typical share from list prices, labelled an estimate. None for usage under a commitment its connection already leaves partly unused (a cheaper family frees commitment, not money). Ranked against scheduling and commitments of the same resource.',
  neverFlags:
    'Current-generation families; magnetic volumes and GPU or memory families get no savings figure (their successors are not cheaper per hour), nor does usage under a partly unused commitment.',
  // Its finding on an old instance reads the prices of every current-generation instance of the scan
  // (in the summary), and on committed usage the connection's unused commitment: both complete only once
  // every shard is read, so such resources are judged at the end of the scan.
  needsWholeScan(resource, data, now) {
    const priced = pricedOf(resource);
    if (priced && oldFamilies.has(`${priced.classLetters}${priced.generation}`)) return true;
    return (
      isCommitted(resource) &&
      (gp2Volume.test(resource.chargeDescription) || magneticVolume.test(resource.chargeDescription)) &&
      mayLeaveUnused(data, resource.connectionId, now)
    );
  },
  resources(data, { currency, now, summary }) {
    const unusedRoom = unusedCommitmentByConnection(data, summary.unnamedUnused, now);
    const peerPrices = Object.values(summary.peers);
    return data.resources.flatMap((resource) => {
      const text = resource.chargeDescription;
      const priced = pricedOf(resource);
      const oldInstance =
        priced && oldFamilies.has(`${priced.classLetters}${priced.generation}`) ? priced : undefined;
      const family =
        oldInstance?.family ?? (gp2Volume.test(text) ? 'gp2' : magneticVolume.test(text) ? 'magnetic' : '');
      if (!family) return [];
      const days = coveredDays(resource);
      const cost = monthlyCostOf(resource);
      const target = oldInstance ? 'its current-generation family' : 'gp3';

      // The closest newer generation of the same class the data prices in the same region, averaged over
      // its resources, on the same basis: list prices when both sides have them, else effective prices.
      let observed:
        | { family: string; types: string; price: number; own: number; share: number; basis: Basis }
        | undefined;
      if (oldInstance) {
        for (const basis of ['list', 'effective'] as const) {
          const own = oldInstance[basis];
          if (own === undefined) continue;
          const newer = peerPrices.filter(
            (p) =>
              p.classLetters === oldInstance.classLetters &&
              p.generation > oldInstance.generation &&
              p.region === oldInstance.region &&
              p.basis === basis,
          );
          if (newer.length === 0) continue;
          // One entry per class, generation, region and basis: the closest generation's.
          const peers = newer.reduce((a, b) => (b.generation < a.generation ? b : a));
          const price = peers.sum / peers.count;
          observed = {
            family: peers.family,
            types: peers.types.join(', '),
            price,
            own,
            share: Math.max(0, 1 - price / own),
            basis,
          };
          break;
        }
      }
      const share =
        observed?.share ??
        typicalShare[oldInstance ? `${oldInstance.classLetters}${oldInstance.generation}` : family] ??
        0;
      // Under a commitment its connection already leaves partly unused, a cheaper family frees more of
      // the commitment, not money: no saving until the commitment is resized.
      const committedIdle =
        isCommitted(resource) && (unusedRoom.get(resource.connectionId) ?? 0) > 0 && share > 0;
      const savings = share > 0 && !committedIdle ? money(cost * share) : undefined;
      const region = resource.regionId ? ` in ${resource.regionId}` : '';
      const basis = observed
        ? ` In this data its successor ${observed.family} costs ${share > 0 ? `${Math.round(share * 100)}% less` : 'no less'} per hour and normalised size than ${family}${region}, at ${observed.basis} price (${observed.types} at ${observed.price.toPrecision(3)} vs ${observed.own.toPrecision(3)} ${currency} per hour and normalised unit).`
        : share > 0
          ? ` Estimate: its successor typically costs ${Math.round(share * 100)}% less than ${family} at list price; the data holds no newer ${family} resource${region} to compare with.`
          : '';
      const committedText = committedIdle
        ? ` It runs under a commitment discount its connection already leaves partly unused: moving it frees commitment, not money (about ${money(cost * share)} ${currency} a month of it), until the commitment is resized (see commitments-unused).`
        : '';
      return [
        {
          ruleId: this.id,
          resourceId: resource.resourceId,
          resourceType: resourceTypeOf(resource),
          severity: this.severity,
          title: this.title,
          description: `${resource.resourceId} is ${oldInstance?.type ?? family}, a previous generation ("${text}"), costing ${money(cost)} ${currency} a month.${basis}${committedText}`,
          recommendation: committedIdle
            ? `Move ${resource.resourceId} to ${observed ? observed.family : target} for speed and support; the saving is realised only when the commitment covering it is resized to what is used.`
            : savings === undefined
              ? `Move ${resource.resourceId} to ${target} for speed and support; no saving is expected.`
              : `Move ${resource.resourceId} to ${observed ? observed.family : target}: about ${savings} ${currency} a month less${observed ? '' : ' (estimate)'}.`,
          ...(savings === undefined
            ? {}
            : { estimatedMonthlySavings: savings, projectedFromDays: projectedDays(days) }),
          currency,
        },
      ];
    });
  },
});

import { unusedCommitmentByConnection } from './commitment-room';
import type { Rule, ScanResource } from './types';
import { coveredDays, money, monthlyCostOf, projectedDays, resourceTypeOf } from './window';

/** An instance type in a charge description: family (class letters, generation, options) and size. */
const instanceType = /\b([a-z]{1,3})(\d)([a-z-]*)\.(nano|micro|small|medium|\d*x?large|metal)\b/i;
/** AWS instance families a current generation replaces. */
const oldFamilies = new Set([
  't1',
  't2',
  'm1',
  'm2',
  'm3',
  'm4',
  'c1',
  'c3',
  'c4',
  'r3',
  'r4',
  'i2',
  'd2',
  'g2',
  'g3',
  'p2',
  'x1',
]);
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

/** Size in normalised units (small = 1), as AWS normalises reservations. */
function sizeUnits(size: string): number {
  const named: Record<string, number> = { nano: 0.25, micro: 0.5, small: 1, medium: 2, large: 4, xlarge: 8 };
  const lower = size.toLowerCase();
  if (named[lower] !== undefined) return named[lower];
  const multiple = /^(\d+)xlarge$/.exec(lower);
  return multiple ? Number(multiple[1]) * 8 : 0;
}

interface Priced {
  classLetters: string;
  generation: number;
  family: string;
  type: string;
  region: string;
  /** List and effective price per hour and normalised unit; undefined when unknown (no cost, no quantity). */
  list: number | undefined;
  effective: number | undefined;
}

/** Prices compared like with like: list with list (what a move changes on demand), else effective with effective. */
type Basis = 'list' | 'effective';

function pricedOf(resource: ScanResource): Priced | undefined {
  const match = instanceType.exec(resource.chargeDescription);
  if (!match) return undefined;
  const [type, letters, generation, options, size] = match;
  const hours =
    /hour|hrs/i.test(resource.pricingUnit) && resource.pricingQuantity > 0
      ? resource.pricingQuantity
      : resource.hoursSeen;
  const units = sizeUnits(size!);
  const per = (cost: number | null) =>
    hours > 0 && units > 0 && cost !== null && cost > 0 ? cost / (hours * units) : undefined;
  return {
    classLetters: letters!.toLowerCase(),
    generation: Number(generation),
    family: `${letters!.toLowerCase()}${generation}${options!.toLowerCase()}`,
    type: type!,
    region: resource.regionId,
    list: per(resource.listCost),
    effective: per(resource.effectiveCost),
  };
}

/** Runs under a commitment discount (its costliest charge priced Committed or covered by one). */
const isCommitted = (resource: ScanResource): boolean =>
  /^committed$/i.test(resource.pricingCategory) || /^used$/i.test(resource.commitmentDiscountStatus);

/** Instances and volumes of a family the provider has superseded (read from the charge description). */
export const previousGeneration: Rule = {
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
  evaluate(data, { currency, now }) {
    const unusedRoom = unusedCommitmentByConnection(data, now);
    const current = data.resources
      .map(pricedOf)
      .filter((p): p is Priced => !!p && !oldFamilies.has(`${p.classLetters}${p.generation}`));
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
          const newer = current.filter(
            (p) =>
              p.classLetters === oldInstance.classLetters &&
              p.generation > oldInstance.generation &&
              p.region === oldInstance.region &&
              p[basis] !== undefined,
          );
          if (newer.length === 0) continue;
          const closest = Math.min(...newer.map((p) => p.generation));
          const peers = newer.filter((p) => p.generation === closest);
          const price = peers.reduce((sum, p) => sum + p[basis]!, 0) / peers.length;
          observed = {
            family: peers[0]!.family,
            types: [...new Set(peers.map((p) => p.type))].sort().join(', '),
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
};

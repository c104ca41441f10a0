import type { ScanResource } from './types';

/** An instance type in a charge description: family (class letters, generation, options) and size. */
const instanceType = /\b([a-z]{1,3})(\d)([a-z-]*)\.(nano|micro|small|medium|\d*x?large|metal)\b/i;
/** AWS instance families a current generation replaces. */
export const oldFamilies = new Set([
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
/** Size in normalised units (small = 1), as AWS normalises reservations. */
function sizeUnits(size: string): number {
  const named: Record<string, number> = { nano: 0.25, micro: 0.5, small: 1, medium: 2, large: 4, xlarge: 8 };
  const lower = size.toLowerCase();
  if (named[lower] !== undefined) return named[lower];
  const multiple = /^(\d+)xlarge$/.exec(lower);
  return multiple ? Number(multiple[1]) * 8 : 0;
}

export interface Priced {
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
export type Basis = 'list' | 'effective';

export function pricedOf(resource: ScanResource): Priced | undefined {
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

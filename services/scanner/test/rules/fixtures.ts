import type {
  ConnectionTotals,
  DailyServiceCost,
  RuleContext,
  ScanData,
  ScanResource,
} from '../../src/rules/types';

/** A 30-day window ending 2024-10-01, in which every hour is 720 hours of resource time. */
export const windowStart = '2024-09-01T00:00:00.000Z';
export const windowEnd = '2024-10-01T00:00:00.000Z';

export const context = (overrides: Partial<RuleContext> = {}): RuleContext => ({
  requiredTags: [],
  now: new Date(windowEnd),
  currency: 'USD',
  minDailyImpact: 50,
  ...overrides,
});

export const resource = (overrides: Partial<ScanResource> = {}): ScanResource => ({
  connectionId: 'con_a',
  resourceId: 'i-1',
  resourceName: '',
  resourceType: 'instance',
  serviceName: 'Amazon Elastic Compute Cloud',
  serviceCategory: 'Compute',
  regionId: 'us-east-1',
  subAccountId: '1',
  providerName: 'AWS',
  skuId: 'SKU',
  chargeCategory: 'Usage',
  pricingUnit: 'Hours',
  consumedUnit: 'Hours',
  pricingQuantity: 720,
  consumedQuantity: 720,
  tags: {},
  billedCost: 100,
  effectiveCost: 100,
  listCost: 100,
  contractedCost: 100,
  chargeDescription: '',
  chargeClass: '',
  pricingCategory: 'Standard',
  commitmentDiscountId: '',
  commitmentDiscountCategory: '',
  commitmentDiscountStatus: '',
  commitmentDiscountType: '',
  capacityReservationId: '',
  capacityReservationStatus: '',
  unusedCommitmentCost: 0,
  unusedCapacityReservationCost: 0,
  extendedSupportCost: 0,
  daysSeen: 30,
  hoursSeen: 720,
  firstSeen: windowStart,
  lastSeen: windowEnd,
  ...overrides,
});

export const totals = (overrides: Partial<ConnectionTotals> = {}): ConnectionTotals => ({
  connectionId: 'con_a',
  effectiveCost: 1000,
  untaggedCost: 0,
  unattributedCost: 0,
  untaggableCategoryCost: 0,
  resources: 10,
  records: 100,
  dataEnd: '',
  ...overrides,
});

export const data = (overrides: Partial<ScanData> = {}): ScanData => ({
  windowStart,
  windowEnd,
  currency: 'USD',
  resources: [],
  totals: [],
  daily: [],
  tagUsage: [],
  commitments: [],
  dataStart: windowStart,
  dataEnd: windowEnd,
  ...overrides,
});

/** One row per day from `first` for `costs.length` days, of one connection and service. */
export function dailySeries(
  first: string,
  costs: number[],
  overrides: Partial<DailyServiceCost> = {},
): DailyServiceCost[] {
  return costs.map((effectiveCost, index) => ({
    connectionId: 'con_a',
    day: new Date(Date.parse(`${first}T00:00:00Z`) + index * 86_400_000).toISOString().slice(0, 10),
    serviceName: 'Amazon Elastic Compute Cloud',
    serviceCategory: 'Compute',
    effectiveCost,
    dataTransferCost: 0,
    usageCost: effectiveCost,
    ...overrides,
  }));
}

/** A few percent of deterministic jitter around 1 (within ±3%), different on every day. */
export const jitter = (day: number, seed = 1): number => 1 + 0.03 * Math.sin(day * 2.39 + seed * 1.7);

/**
 * Daily rows of one connection and service over `days` days from `first`: `usage(day)` is its usage-based
 * cost (usageCost), `other(day)` what else is booked that day (recurring fees, purchases, taxes, credits),
 * which counts in effectiveCost only. A day where both are 0 has no row.
 */
export function dailyRows(
  first: string,
  days: number,
  usage: (day: number) => number,
  other: (day: number) => number = () => 0,
  overrides: Partial<DailyServiceCost> = {},
): DailyServiceCost[] {
  return Array.from({ length: days }, (_, index) => {
    const usageCost = usage(index);
    const otherCost = other(index);
    return {
      connectionId: 'con_a',
      day: new Date(Date.parse(`${first}T00:00:00Z`) + index * 86_400_000).toISOString().slice(0, 10),
      serviceName: 'Amazon Elastic Compute Cloud',
      serviceCategory: 'Compute',
      effectiveCost: usageCost + otherCost,
      dataTransferCost: 0,
      usageCost,
      ...overrides,
    };
  }).filter((row) => row.effectiveCost !== 0 || row.usageCost !== 0);
}

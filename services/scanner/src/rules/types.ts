/**
 * What the rules read and what they answer. ScanData is the costs service's per-resource aggregate of
 * the raw FOCUS rows of a project's connections over the scan window (costs.v1 GetScanData): a million
 * rows arrive as a few thousand resources plus daily series, so every rule is a pure function over it.
 *
 * Costs keeps these FOCUS columns (cost_records): costs (billed/effective/list/contracted), service
 * name/category, resource id/name/type, region, sub account, charge category, SKU id, pricing and
 * consumed quantity/unit, provider, tags, and (migration 0003) ChargeDescription, ChargeClass,
 * PricingCategory, the CommitmentDiscount* columns and CapacityReservationId/Status (FOCUS 1.1+).
 */

export type Severity = 'low' | 'medium' | 'high' | 'critical';

/** What a rule reads: tags, commitments, compute, storage, network, spend. */
export type RuleCategory = 'tags' | 'commitments' | 'compute' | 'storage' | 'network' | 'spend';

/** One resource of one connection, summed over the scan window. */
export interface ScanResource {
  connectionId: string;
  resourceId: string;
  resourceName: string;
  resourceType: string;
  serviceName: string;
  serviceCategory: string;
  regionId: string;
  subAccountId: string;
  providerName: string;
  /** The SKU that carried most of the resource's cost. */
  skuId: string;
  /** Usage | Purchase | Tax | Credit | Adjustment: the one that carried most of the cost. */
  chargeCategory: string;
  /** Units of the resource's main SKU (e.g. Hours, GB-Months, GB). */
  pricingUnit: string;
  consumedUnit: string;
  pricingQuantity: number;
  consumedQuantity: number;
  /** The tags of the resource's most recent row ({} when it has none). */
  tags: Record<string, string>;
  billedCost: number;
  effectiveCost: number;
  /** Null when no row of the resource carried a list cost. */
  listCost: number | null;
  contractedCost: number | null;
  /** FOCUS columns of the resource's costliest row ('' when the file lacks them). */
  chargeDescription: string;
  chargeClass: string;
  /** Standard | Committed | Dynamic | Other */
  pricingCategory: string;
  commitmentDiscountId: string;
  /** Spend | Usage */
  commitmentDiscountCategory: string;
  /** Used | Unused */
  commitmentDiscountStatus: string;
  /** e.g. Savings Plan, Reserved Instance */
  commitmentDiscountType: string;
  capacityReservationId: string;
  /** Used | Unused (FOCUS 1.1+) */
  capacityReservationStatus: string;
  /** Of effectiveCost: rows whose commitment discount went unused (CommitmentDiscountStatus Unused). */
  unusedCommitmentCost: number;
  /** Of effectiveCost: rows whose capacity reservation went unused (CapacityReservationStatus Unused). */
  unusedCapacityReservationCost: number;
  /** UTC days with at least one row, and hours covered by its charge periods (distinct). */
  daysSeen: number;
  hoursSeen: number;
  /** ISO timestamps of the first charge period start and the last charge period end. */
  firstSeen: string;
  lastSeen: string;
}

/** Cost of one UTC day of one connection and service. */
export interface DailyServiceCost {
  connectionId: string;
  /** YYYY-MM-DD */
  day: string;
  serviceName: string;
  serviceCategory: string;
  effectiveCost: number;
  /** Of effectiveCost: usage priced per GB outside storage (data transfer). */
  dataTransferCost: number;
}

/** Totals of one connection over the window (computed over every row, not only the resources returned). */
export interface ConnectionTotals {
  connectionId: string;
  effectiveCost: number;
  /** Rows without any tag. */
  untaggedCost: number;
  /** Rows without a resource id. */
  unattributedCost: number;
  resources: number;
  records: number;
}

/** A tag key=value pair as used over the window. */
export interface TagUsage {
  key: string;
  value: string;
  resources: number;
  effectiveCost: number;
}

export interface ScanData {
  /** The window the aggregates cover: [start, end), ISO timestamps. */
  windowStart: string;
  windowEnd: string;
  /** Costs' billing currency of the data (the most used one). */
  currency: string;
  resources: ScanResource[];
  /** True when more resources existed than were returned (the costliest ones are returned). */
  truncated: boolean;
  totals: ConnectionTotals[];
  daily: DailyServiceCost[];
  tagUsage: TagUsage[];
}

/** What a rule found: one finding about one resource (or a connection / 'project' for team-wide ones). */
export interface RuleResult {
  ruleId: string;
  resourceId: string;
  resourceType: string;
  severity: Severity;
  title: string;
  description: string;
  recommendation: string;
  estimatedMonthlySavings?: number;
  currency: string;
}

export interface RuleContext {
  /** The team's required tag keys (identity GetTeamSettings.required_tags). */
  requiredTags: string[];
  now: Date;
  currency: string;
}

export interface Rule {
  id: string;
  severity: Severity;
  category: RuleCategory;
  title: string;
  description: string;
  recommendation: string;
  evaluate(data: ScanData, context: RuleContext): RuleResult[];
}

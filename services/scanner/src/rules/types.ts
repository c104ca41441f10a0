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

import type { costs } from '@costgov/contracts';

export type Severity = 'low' | 'medium' | 'high' | 'critical';

/** What a rule reads: tags, commitments, compute, storage, network, spend. */
export type RuleCategory = 'tags' | 'commitments' | 'compute' | 'storage' | 'network' | 'spend';

/** A proto message's fields, as a literal of them is written. */
type Fields<M> = Omit<M, '$typeName' | '$unknown'>;

/**
 * One resource of one connection, summed over the scan window: costs.v1 `ScanResource` as it arrives
 * (proto/costgov/costs/v1/costs.proto documents its fields), with its first and last seen times as ISO
 * timestamps and null for a list or contracted cost that no row of the resource carried.
 *
 * What rules rely on: the descriptive columns come from the resource's costliest row ('' when the file
 * lacks them): `skuId`, `chargeCategory` (Usage | Purchase | Tax | Credit | Adjustment), `pricingUnit`
 * (Hours, GB-Months, GB), `pricingCategory` (Standard | Committed | Dynamic | Other), the commitment
 * discount and capacity reservation columns (status Used | Unused); `tags` are its latest row's ({} when
 * none); `daysSeen` counts UTC days with a row, `hoursSeen` the hours its charge periods cover.
 */
export type ScanResource = Omit<
  Fields<costs.ScanResource>,
  'listCost' | 'contractedCost' | 'firstSeen' | 'lastSeen'
> & {
  listCost: number | null;
  contractedCost: number | null;
  firstSeen: string;
  lastSeen: string;
};

/**
 * Cost of one UTC day (YYYY-MM-DD) of one connection and service, with its data transfer part and its
 * usage-based part (`usageCost`, by costs' one rule: ChargeCategory Usage and ChargeFrequency
 * Usage-Based, in any case, a null column not deciding), the only part daily anomaly rules judge.
 */
export type DailyServiceCost = Fields<costs.DailyServiceCost>;

/** One commitment discount of a connection: its used and unused cost, first and last seen (ISO). */
export type CommitmentUse = Omit<Fields<costs.CommitmentUse>, 'firstSeen' | 'lastSeen'> & {
  firstSeen: string;
  lastSeen: string;
};

/**
 * Totals of one connection over the window (computed over every row, not only the resources returned),
 * with where its data ends (`dataEnd`, ISO; '' when it has no usage-based row): the last charge period
 * end of its usage-based rows, capped at the time costs answered.
 */
export type ConnectionTotals = Omit<
  Fields<costs.ConnectionScanTotals>,
  'records' | 'dataEnd' | 'unusedCommitmentRecords'
> & {
  records: number;
  dataEnd: string;
  /** Rows billed as unused commitment; unknown (undefined) in data made without it. */
  unusedCommitmentRecords?: number;
};

/** A tag key=value pair as used over the window. */
export type TagUsage = Fields<costs.TagUsage>;

export interface ScanData {
  /** The window the aggregates cover: [start, end), ISO timestamps. */
  windowStart: string;
  windowEnd: string;
  /** Costs' billing currency of the data (the most used one). */
  currency: string;
  /** Every resource of the window (all of costs' pages), costliest first. */
  resources: ScanResource[];
  totals: ConnectionTotals[];
  daily: DailyServiceCost[];
  tagUsage: TagUsage[];
  /** Commitment discounts named by the rows, with their used and unused cost. */
  commitments: CommitmentUse[];
  /**
   * The span the data covers: first charge period start and last charge period end of the rows in the
   * window (ISO; '' when there are none). Run rates are measured over it, never over the whole window.
   */
  dataStart: string;
  dataEnd: string;
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
  /** Days of data a monthly figure (the savings, or a run rate in the texts) was projected from. */
  projectedFromDays?: number;
  currency: string;
}

export interface RuleContext {
  /** The team's required tag keys (identity GetTeamSettings.required_tags). */
  requiredTags: string[];
  now: Date;
  currency: string;
  /**
   * The team's minimum daily impact, in the data's currency: a day whose usage-based spend exceeds its
   * baseline by less than this is never flagged as an anomaly (default `defaultMinDailyImpact`).
   */
  minDailyImpact: number;
}

/** What the scanner uses when the team set no minimum daily impact for anomalies (data's currency). */
export const defaultMinDailyImpact = 50;

/** The project's aggregates without its resources: what project-wide rules read, and per-resource rules besides the resource. */
export type ScanAggregates = Omit<ScanData, 'resources'>;

/** Unit prices of current-generation instances of one class, generation and region, on one basis. */
export interface PeerPrices {
  classLetters: string;
  generation: number;
  region: string;
  basis: 'list' | 'effective';
  /** Sum and count of the resources' prices per hour and normalised unit (their mean is the price). */
  sum: number;
  count: number;
  /** Family of the costliest of them (effective cost, then connection and resource id), for the text. */
  family: string;
  familyOf: { effectiveCost: number; connectionId: string; resourceId: string };
  /** Instance types among them, sorted. */
  types: string[];
}

/**
 * What some per-resource rules need from every resource of the scan, in a form that adds up page by page
 * and shard by shard (rules/summary.ts): the unused commitment of rows whose commitment the data does not
 * name (commitment-room), and the observed prices of current-generation instances (previous-generation).
 */
export interface ScanSummary {
  /** Per connection: the monthly unused commitment of resources whose commitment the data does not name. */
  unnamedUnused: Record<string, number>;
  /** Per `class|generation|region|basis`. */
  peers: Record<string, PeerPrices>;
}

/** What a per-resource rule reads besides the resources and the aggregates: the whole scan's summary. */
export interface ResourceRuleContext extends RuleContext {
  summary: ScanSummary;
}

/** What a rule is, as the catalogue lists it. */
export interface RuleInfo {
  id: string;
  severity: Severity;
  category: RuleCategory;
  title: string;
  description: string;
  recommendation: string;
  /** What data it needs before it can fire (history, charge types). */
  needs: string;
  /** How it computes estimated_monthly_savings ("none" when it does not). */
  savings: string;
  /** What it never flags. */
  neverFlags: string;
}

/**
 * A rule has one or both parts. `resources` judges each resource of `data.resources` on its own, with
 * the aggregates and the whole scan's summary: a scan runs it page by page, shard by shard, and the
 * findings of one resource never depend on which other resources share its page. Where its finding on a
 * resource needs more of the scan than the summary holds (how the connection's unused commitment is
 * shared out over its steady resources), `needsWholeScan` says so and that resource is judged once at
 * the end of the scan, with every such resource (rules/engine.ts). `project` reads only the aggregates
 * (totals, daily series, tag usage, commitments): it runs once per scan.
 */
export interface RuleParts {
  resources?(this: Rule, data: ScanData, context: ResourceRuleContext): RuleResult[];
  project?(this: Rule, data: ScanAggregates, context: RuleContext): RuleResult[];
  needsWholeScan?(resource: ScanResource, data: ScanAggregates, now?: Date): boolean;
}

export interface Rule extends RuleInfo, RuleParts {
  /** Both parts over the whole data at once (the summary computed from `data.resources`). */
  evaluate(data: ScanData, context: RuleContext): RuleResult[];
}

export const severities = ['info', 'warning', 'critical'] as const;
export type Severity = (typeof severities)[number];

export const statuses = ['open', 'acknowledged', 'resolved'] as const;
export type Status = (typeof statuses)[number];

export const violationType = 'budget_threshold_breach';

export interface Violation {
  id: string;
  teamId: string;
  projectId: string;
  budgetId: string;
  type: string;
  severity: Severity;
  status: Status;
  message: string;
  /** Spend of the period when the threshold was crossed, in `currency`. */
  currentValue: number;
  /** The crossed threshold as an amount in `currency`. */
  thresholdValue: number;
  thresholdPercentage: number;
  currency: string;
  /** YYYY-MM-DD of the budget period's first day. */
  periodStart: string;
  acknowledgedBy: string | null;
  acknowledgedAt: Date | null;
  acknowledgeNote: string | null;
  resolvedBy: string | null;
  resolvedAt: Date | null;
  resolveNote: string | null;
  createdAt: Date;
  updatedAt: Date;
}

export interface ViolationRow {
  id: string;
  team_id: string;
  project_id: string;
  budget_id: string;
  type: string;
  severity: Severity;
  status: Status;
  message: string;
  current_value: number;
  threshold_value: number;
  threshold_percentage: number;
  currency: string;
  period_start: string;
  acknowledged_by: string | null;
  acknowledged_at: Date | null;
  acknowledge_note: string | null;
  resolved_by: string | null;
  resolved_at: Date | null;
  resolve_note: string | null;
  created_at: Date;
  updated_at: Date;
}

/** Every column, the period as text: a `date` would come back as a local-time Date. */
export const violationColumns = `v.id, v.team_id, v.project_id, v.budget_id, v.type, v.severity, v.status,
  v.message, v.current_value, v.threshold_value, v.threshold_percentage, v.currency,
  v.period_start::text AS period_start, v.acknowledged_by, v.acknowledged_at, v.acknowledge_note,
  v.resolved_by, v.resolved_at, v.resolve_note, v.created_at, v.updated_at`;

export const toViolation = (row: ViolationRow): Violation => ({
  id: row.id,
  teamId: row.team_id,
  projectId: row.project_id,
  budgetId: row.budget_id,
  type: row.type,
  severity: row.severity,
  status: row.status,
  message: row.message,
  currentValue: row.current_value,
  thresholdValue: row.threshold_value,
  thresholdPercentage: row.threshold_percentage,
  currency: row.currency,
  periodStart: row.period_start,
  acknowledgedBy: row.acknowledged_by,
  acknowledgedAt: row.acknowledged_at,
  acknowledgeNote: row.acknowledge_note,
  resolvedBy: row.resolved_by,
  resolvedAt: row.resolved_at,
  resolveNote: row.resolve_note,
  createdAt: row.created_at,
  updatedAt: row.updated_at,
});

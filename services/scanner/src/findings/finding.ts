export const severities = ['low', 'medium', 'high', 'critical'] as const;
export const statuses = ['open', 'suppressed', 'resolved'] as const;

export type Severity = (typeof severities)[number];
export type Status = (typeof statuses)[number];

export interface Finding {
  id: string;
  teamId: string;
  projectId: string;
  scanId: string;
  firstScanId: string;
  ruleId: string;
  resourceId: string;
  resourceType: string;
  severity: Severity;
  status: Status;
  title: string;
  description: string;
  recommendation: string;
  estimatedMonthlySavings: number | null;
  /** Days of data the monthly figure was projected from; null when the finding carries none. */
  projectedFromDays: number | null;
  currency: string;
  suppressionReason: string | null;
  suppressedBy: string | null;
  createdAt: Date;
  updatedAt: Date;
  resolvedAt: Date | null;
}

export interface FindingRow {
  id: string;
  team_id: string;
  project_id: string;
  scan_id: string;
  first_scan_id: string;
  rule_id: string;
  resource_id: string;
  resource_type: string;
  severity: Severity;
  status: Status;
  title: string;
  description: string;
  recommendation: string;
  estimated_monthly_savings: number | null;
  projected_from_days: number | null;
  currency: string;
  suppression_reason: string | null;
  suppressed_by: string | null;
  created_at: Date;
  updated_at: Date;
  resolved_at: Date | null;
}

export const findingColumns = `f.id, f.team_id, f.project_id, f.scan_id, f.first_scan_id, f.rule_id, f.resource_id,
  f.resource_type, f.severity, f.status, f.title, f.description, f.recommendation, f.estimated_monthly_savings,
  f.projected_from_days, f.currency, f.suppression_reason, f.suppressed_by, f.created_at, f.updated_at, f.resolved_at`;

/** Most severe first, then newest; the id breaks ties so pages never overlap or skip. */
export const findingOrder = 'f.severity_rank DESC, f.created_at DESC, f.id DESC';

export const toFinding = (row: FindingRow): Finding => ({
  id: row.id,
  teamId: row.team_id,
  projectId: row.project_id,
  scanId: row.scan_id,
  firstScanId: row.first_scan_id,
  ruleId: row.rule_id,
  resourceId: row.resource_id,
  resourceType: row.resource_type,
  severity: row.severity,
  status: row.status,
  title: row.title,
  description: row.description,
  recommendation: row.recommendation,
  estimatedMonthlySavings: row.estimated_monthly_savings,
  projectedFromDays: row.projected_from_days,
  currency: row.currency,
  suppressionReason: row.suppression_reason,
  suppressedBy: row.suppressed_by,
  createdAt: row.created_at,
  updatedAt: row.updated_at,
  resolvedAt: row.resolved_at,
});

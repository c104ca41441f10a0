/** A scan as the scanner stores it (table `scans`). */
export const scanStatuses = ['pending', 'running', 'completed', 'failed'] as const;
export type ScanStatus = (typeof scanStatuses)[number];

export interface Scan {
  id: string;
  teamId: string;
  projectId: string;
  status: ScanStatus;
  connectionIds: string[];
  resourcesScanned: number;
  findingsCount: number;
  /** Credits taken for the scan; 0 once a failed scan gave them back (the refund follows its failure). */
  creditsUsed: number;
  error: string | null;
  startedAt: Date | null;
  completedAt: Date | null;
  createdAt: Date;
}

export interface ScanRow {
  id: string;
  team_id: string;
  project_id: string;
  status: ScanStatus;
  connection_ids: string[];
  resources_scanned: number;
  findings_count: number;
  credits_used: number;
  error: string | null;
  worker_id: string | null;
  heartbeat_at: Date | null;
  started_at: Date | null;
  completed_at: Date | null;
  created_at: Date;
}

export const toScan = (row: ScanRow): Scan => ({
  id: row.id,
  teamId: row.team_id,
  projectId: row.project_id,
  status: row.status,
  connectionIds: row.connection_ids,
  resourcesScanned: row.resources_scanned,
  findingsCount: row.findings_count,
  creditsUsed: row.credits_used,
  error: row.error,
  startedAt: row.started_at,
  completedAt: row.completed_at,
  createdAt: row.created_at,
});

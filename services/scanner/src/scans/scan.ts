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
  /** Shards the scan was split into; 0 until a worker planned it. */
  shardsTotal: number;
  /** Shards whose results are stored. */
  shardsDone: number;
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
  /** End of the data window and the rules' clock, fixed when the scan is planned (null before). */
  window_end: Date | null;
  planned_now: Date | null;
  shards_total: number;
}

/** A scan as read for its owner: with its shards' progress (`scanWithProgress`). */
export interface ScanProgressRow extends ScanRow {
  shards_done: number;
  shards_scanned: number;
}

/**
 * A scan's columns with its shards' progress, for `FROM scans s`: shards stored, and resources judged so
 * far summed over the shards (a running shard reports its count with each heartbeat).
 */
export const scanWithProgress = `s.*,
  coalesce(p.shards_done, 0) AS shards_done, coalesce(p.shards_scanned, 0) AS shards_scanned
  FROM scans s LEFT JOIN LATERAL (
    SELECT count(*) FILTER (WHERE status = 'done')::int AS shards_done,
      sum(resources_scanned)::int AS shards_scanned
    FROM scan_shards WHERE scan_id = s.id) p ON true`;

export const toScan = (row: ScanProgressRow): Scan => ({
  id: row.id,
  teamId: row.team_id,
  projectId: row.project_id,
  status: row.status,
  connectionIds: row.connection_ids,
  // A finished scan keeps what it stored; one on its way shows its shards' progress so far.
  resourcesScanned:
    row.status === 'completed' || row.shards_total === 0 ? row.resources_scanned : row.shards_scanned,
  findingsCount: row.findings_count,
  creditsUsed: row.credits_used,
  error: row.error,
  startedAt: row.started_at,
  completedAt: row.completed_at,
  createdAt: row.created_at,
  shardsTotal: row.shards_total,
  shardsDone: row.shards_done,
});

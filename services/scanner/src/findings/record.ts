import type { Outbox } from '@costgov/bus';
import type { Queryable } from '@costgov/db';
import type { IdGenerator } from '@costgov/ids';
import type { RuleResult } from '../rules/types';
import { publishFindingChanges, type FindingChange } from './changes';
import { findingColumns, toFinding, type Finding, type FindingRow } from './finding';
import { fingerprintOf } from './fingerprint';

// Callers that only record findings can take the type from here.
export type { RuleResult };

export interface RecordFindingsDeps {
  outbox: Outbox;
  newId: IdGenerator;
  now: () => Date;
}

export interface RecordFindingsInput {
  teamId: string;
  projectId: string;
  scanId: string;
  results: RuleResult[];
  /**
   * Resources whose cost the scan read: an open finding this scan did not report is resolved "with its
   * resource" when its resource is among them (the problem went away while the resource is still billed),
   * "without" otherwise. None given: every finding resolved here is resolved without its resource.
   */
  resourceIds?: string[];
}

interface KnownRow {
  id: string;
  fingerprint: string;
  status: string;
  severity: string;
  estimated_monthly_savings: number | null;
}

/**
 * Stores what one scan of a project saw, in the caller's transaction (the one completing the scan),
 * unless a newer scan of the project has already completed (then the newer picture stands):
 * a new fingerprint opens a finding; a known one is refreshed (a resolved one reopens); an open
 * finding this scan did not see is resolved (noting whether its resource was among the scan's
 * resources, `resolved_with_resource`); a suppressed one stays suppressed either way.
 * Events: `created` for a new finding, `resolved` for one resolved here, `updated` when a finding
 * seen again changed status, severity or savings (what the event carries).
 */
export async function recordFindings(
  tx: Queryable,
  { outbox, newId, now }: RecordFindingsDeps,
  { teamId, projectId, scanId, results, resourceIds = [] }: RecordFindingsInput,
): Promise<{ findingsCount: number }> {
  const at = now();
  // One finding per rule and resource: a rule reporting the same resource twice keeps the last report.
  const byFingerprint = new Map(results.map((result) => [fingerprintOf(result), result]));

  // One recording per project at a time, and none from a scan older than one already completed: a slow
  // scan finishing after a newer one saw older data and must not resolve what the newer one found.
  await tx.query('SELECT pg_advisory_xact_lock(hashtext($1))', [`findings:${teamId}:${projectId}`]);
  const { rows: newer } = await tx.query(
    `SELECT 1 FROM scans s JOIN scans mine ON mine.id = $3
     WHERE s.team_id = $1 AND s.project_id = $2 AND s.status = 'completed' AND s.id <> mine.id
       AND (s.created_at, s.id) > (mine.created_at, mine.id)
     LIMIT 1`,
    [teamId, projectId, scanId],
  );
  if (newer.length > 0) return { findingsCount: byFingerprint.size };

  // Locked in id order so a purge or a PATCH meeting this scan waits rather than deadlocks.
  const { rows: known } = await tx.query<KnownRow>(
    `SELECT id, fingerprint, status, severity, estimated_monthly_savings FROM findings
     WHERE team_id = $1 AND project_id = $2 ORDER BY id FOR UPDATE`,
    [teamId, projectId],
  );
  const before = new Map(known.map((row) => [row.fingerprint, row]));

  const seen = [...byFingerprint].map(([fingerprint, r]) => ({
    id: before.get(fingerprint)?.id ?? newId('finding'),
    fingerprint,
    rule_id: r.ruleId,
    resource_id: r.resourceId,
    resource_type: r.resourceType,
    severity: r.severity,
    title: r.title,
    description: r.description,
    recommendation: r.recommendation,
    estimated_monthly_savings: r.estimatedMonthlySavings ?? null,
    projected_from_days: r.projectedFromDays ?? null,
    currency: r.currency,
  }));

  // Only what tells a change comes back (a re-scan of a large estate upserts tens of thousands of findings,
  // each with its texts); the changed findings are read whole after.
  const { rows: upserted } = seen.length
    ? await tx.query<KnownRow>(
        `INSERT INTO findings AS f (id, team_id, project_id, scan_id, first_scan_id, rule_id, fingerprint,
           resource_id, resource_type, severity, title, description, recommendation,
           estimated_monthly_savings, projected_from_days, currency, created_at, updated_at)
         SELECT s.id, $1, $2, $3, $3, s.rule_id, s.fingerprint, s.resource_id, s.resource_type, s.severity,
           s.title, s.description, s.recommendation, s.estimated_monthly_savings, s.projected_from_days,
           s.currency, $5, $5
         FROM jsonb_to_recordset($4::jsonb) AS s(id text, fingerprint text, rule_id text, resource_id text,
           resource_type text, severity text, title text, description text, recommendation text,
           estimated_monthly_savings numeric, projected_from_days integer, currency text)
         ON CONFLICT (team_id, project_id, fingerprint) DO UPDATE SET
           scan_id = EXCLUDED.scan_id, severity = EXCLUDED.severity, resource_type = EXCLUDED.resource_type,
           title = EXCLUDED.title, description = EXCLUDED.description,
           recommendation = EXCLUDED.recommendation,
           estimated_monthly_savings = EXCLUDED.estimated_monthly_savings,
           projected_from_days = EXCLUDED.projected_from_days, currency = EXCLUDED.currency,
           status = CASE WHEN f.status = 'resolved' THEN 'open' ELSE f.status END,
           resolved_at = CASE WHEN f.status = 'resolved' THEN NULL ELSE f.resolved_at END,
           resolved_with_resource = CASE WHEN f.status = 'resolved' THEN NULL ELSE f.resolved_with_resource END,
           updated_at = EXCLUDED.updated_at
         RETURNING f.id, f.fingerprint, f.status, f.severity, f.estimated_monthly_savings`,
        [teamId, projectId, scanId, JSON.stringify(seen), at],
      )
    : { rows: [] };

  const { rows: resolved } = await tx.query<FindingRow>(
    `UPDATE findings f SET status = 'resolved', resolved_at = $4, updated_at = $4,
       resolved_with_resource = f.resource_id = ANY($5::text[])
     WHERE f.team_id = $1 AND f.project_id = $2 AND f.status = 'open' AND f.scan_id <> $3
     RETURNING ${findingColumns}`,
    [teamId, projectId, scanId, at, resourceIds],
  );

  const changed = new Map<string, FindingChange>();
  for (const row of upserted) {
    const previous = before.get(row.fingerprint);
    if (!previous) changed.set(row.id, 'created');
    else if (
      previous.status !== row.status ||
      previous.severity !== row.severity ||
      previous.estimated_monthly_savings !== row.estimated_monthly_savings
    )
      changed.set(row.id, 'updated');
  }
  const { rows: changedRows } = changed.size
    ? await tx.query<FindingRow>(`SELECT ${findingColumns} FROM findings f WHERE f.id = ANY($1::text[])`, [
        [...changed.keys()],
      ])
    : { rows: [] };
  const changedById = new Map(changedRows.map((row) => [row.id, row]));
  // Written together (a first scan of a large estate opens thousands): one statement per few thousand.
  // In the upsert's order, as before.
  const changes: Array<{ change: FindingChange; finding: Finding }> = [];
  for (const [id, change] of changed) changes.push({ change, finding: toFinding(changedById.get(id)!) });
  for (const row of resolved) changes.push({ change: 'resolved', finding: toFinding(row) });
  await publishFindingChanges(outbox, tx, changes);

  return { findingsCount: byFingerprint.size };
}

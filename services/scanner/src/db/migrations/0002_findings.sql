CREATE TABLE findings (
  id text PRIMARY KEY,
  team_id text NOT NULL,
  project_id text NOT NULL,
  -- The last scan that saw it, and the scan that first did.
  scan_id text NOT NULL,
  first_scan_id text NOT NULL,
  rule_id text NOT NULL,
  -- Rule and resource: a later scan that sees the same problem finds the same row.
  fingerprint text NOT NULL,
  resource_id text NOT NULL,
  resource_type text NOT NULL,
  severity text NOT NULL CHECK (severity IN ('low', 'medium', 'high', 'critical')),
  -- The severity as a number, so lists sort most severe first with an index.
  severity_rank smallint NOT NULL GENERATED ALWAYS AS (
    CASE severity WHEN 'critical' THEN 4 WHEN 'high' THEN 3 WHEN 'medium' THEN 2 ELSE 1 END
  ) STORED,
  status text NOT NULL DEFAULT 'open' CHECK (status IN ('open', 'suppressed', 'resolved')),
  title text NOT NULL,
  description text NOT NULL,
  recommendation text NOT NULL,
  estimated_monthly_savings numeric,
  currency text NOT NULL,
  suppression_reason text,
  suppressed_by text,
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now(),
  resolved_at timestamptz,
  UNIQUE (team_id, project_id, fingerprint)
);
CREATE INDEX findings_team_order ON findings (team_id, severity_rank DESC, created_at DESC, id DESC);
CREATE INDEX findings_team_project ON findings (team_id, project_id, status);
CREATE INDEX findings_team_scan ON findings (team_id, scan_id);
CREATE INDEX findings_team_rule ON findings (team_id, rule_id);

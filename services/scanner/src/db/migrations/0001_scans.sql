CREATE TABLE scans (
  id text PRIMARY KEY,
  team_id text NOT NULL,
  project_id text NOT NULL,
  status text NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'running', 'completed', 'failed')),
  -- The project's connections when the scan was requested: what it reads and what it was charged for.
  connection_ids text[] NOT NULL DEFAULT '{}',
  resources_scanned integer NOT NULL DEFAULT 0,
  findings_count integer NOT NULL DEFAULT 0,
  credits_used integer NOT NULL,
  error text,
  -- The worker running it and when it last reported; the sweeper fails a scan whose worker went quiet.
  worker_id text,
  heartbeat_at timestamptz,
  started_at timestamptz,
  completed_at timestamptz,
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX scans_team_created ON scans (team_id, created_at DESC, id);
CREATE INDEX scans_team_project ON scans (team_id, project_id);
CREATE INDEX scans_running ON scans (heartbeat_at) WHERE status = 'running';

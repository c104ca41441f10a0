CREATE TABLE violations (
  id text PRIMARY KEY,
  team_id text NOT NULL,
  project_id text NOT NULL,
  budget_id text NOT NULL,
  type text NOT NULL,
  severity text NOT NULL CHECK (severity IN ('info', 'warning', 'critical')),
  status text NOT NULL DEFAULT 'open' CHECK (status IN ('open', 'acknowledged', 'resolved')),
  message text NOT NULL,
  current_value numeric NOT NULL,
  threshold_value numeric NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX violations_team_project ON violations (team_id, project_id);

-- One row per deleted project whose violations were purged: the audit trail of an irreversible delete.
CREATE TABLE project_purges (
  project_id text PRIMARY KEY,
  team_id text NOT NULL,
  event_id text NOT NULL,
  violations_removed integer NOT NULL,
  purged_at timestamptz NOT NULL DEFAULT now()
);

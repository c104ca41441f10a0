CREATE TABLE projects (
  id text PRIMARY KEY,
  team_id text NOT NULL,
  name text NOT NULL,
  status text NOT NULL DEFAULT 'active' CHECK (status IN ('active', 'archived')),
  connection_ids text[] NOT NULL DEFAULT '{}',
  approval_rules jsonb,
  -- Open and acknowledged violations, kept from the violations service's events.
  violation_count integer NOT NULL DEFAULT 0,
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now()
);
-- Project names are unique per team regardless of case.
CREATE UNIQUE INDEX projects_team_name ON projects (team_id, lower(name));
CREATE INDEX projects_team_created ON projects (team_id, created_at, id);
CREATE INDEX projects_connection_ids ON projects USING gin (connection_ids);

CREATE TABLE budgets (
  id text PRIMARY KEY,
  team_id text NOT NULL,
  project_id text NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
  name text NOT NULL,
  amount numeric NOT NULL CHECK (amount > 0),
  currency text NOT NULL,
  period text NOT NULL CHECK (period IN ('monthly', 'quarterly', 'yearly')),
  thresholds jsonb NOT NULL DEFAULT '[]',
  tags jsonb NOT NULL DEFAULT '{}',
  status text NOT NULL DEFAULT 'active' CHECK (status IN ('active', 'breached', 'archived')),
  current_spend numeric NOT NULL DEFAULT 0,
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now()
);
CREATE UNIQUE INDEX budgets_project_name ON budgets (project_id, lower(name));
CREATE INDEX budgets_team_project ON budgets (team_id, project_id);

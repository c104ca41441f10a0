-- What a violation was opened for (budget, threshold, period), who acknowledged and resolved it, and the
-- orders the list sorts by.
ALTER TABLE violations
  ADD COLUMN threshold_percentage numeric,
  ADD COLUMN currency text NOT NULL DEFAULT '',
  ADD COLUMN period_start date,
  ADD COLUMN acknowledged_by text,
  ADD COLUMN acknowledged_at timestamptz,
  ADD COLUMN acknowledge_note text,
  ADD COLUMN resolved_by text,
  ADD COLUMN resolved_at timestamptz,
  ADD COLUMN resolve_note text;

-- Rows from before this migration had no producer of their own; they get their threshold and month.
UPDATE violations SET threshold_percentage = threshold_value, period_start = date_trunc('month', created_at)::date;
ALTER TABLE violations
  ALTER COLUMN threshold_percentage SET NOT NULL,
  ALTER COLUMN period_start SET NOT NULL,
  ADD CONSTRAINT violations_open_untouched CHECK (status <> 'open' OR (acknowledged_at IS NULL AND resolved_at IS NULL)),
  ADD CONSTRAINT violations_acknowledged_at CHECK (status <> 'acknowledged' OR acknowledged_at IS NOT NULL),
  ADD CONSTRAINT violations_resolved_at CHECK ((status = 'resolved') = (resolved_at IS NOT NULL));

-- One violation per budget, threshold and period, however often the crossing is reported.
CREATE UNIQUE INDEX violations_budget_threshold_period ON violations (budget_id, threshold_percentage, period_start);

-- Lists are team-scoped and sorted (default newest first); ties are broken by id.
CREATE INDEX violations_team_created ON violations (team_id, created_at, id);
CREATE INDEX violations_team_budget ON violations (team_id, budget_id);
CREATE INDEX violations_team_status ON violations (team_id, status, created_at, id);

-- One row per deleted budget whose violations were purged: a late threshold event for it opens nothing.
CREATE TABLE budget_purges (
  budget_id text PRIMARY KEY,
  team_id text NOT NULL,
  event_id text NOT NULL,
  violations_removed integer NOT NULL,
  purged_at timestamptz NOT NULL DEFAULT now()
);

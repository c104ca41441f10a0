-- What the last evaluation of a budget found, so reads answer without asking costs (also while it is down).
-- `thresholds` holds [{"percentage": 50, "notified_at": null | ISO time}] sorted by percentage; the
-- notified times belong to the period starting at `period_start` and are cleared when a new one begins.
ALTER TABLE budgets
  ADD COLUMN percentage_used numeric NOT NULL DEFAULT 0,
  ADD COLUMN unconverted_spend jsonb NOT NULL DEFAULT '[]',
  ADD COLUMN last_charge_day date,
  ADD COLUMN period_start timestamptz,
  ADD COLUMN evaluated_at timestamptz,
  -- Set by changes that alter spend (create, update, new cost data, a failed evaluation); the sweep
  -- evaluates what is left set, so nothing waits for the next upload.
  ADD COLUMN needs_evaluation boolean NOT NULL DEFAULT true;

CREATE INDEX budgets_needs_evaluation ON budgets (id) WHERE needs_evaluation AND status <> 'archived';
CREATE INDEX budgets_team_created ON budgets (team_id, created_at, id);

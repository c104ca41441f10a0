-- What the forecast needs beyond current_spend: its usage-based part, projected at its run rate up to
-- the latest usage day (recurring fees, purchases, taxes, credits and adjustments are counted once), and
-- that day. Budgets evaluated before have neither: they are evaluated again.
ALTER TABLE budgets
  ADD COLUMN usage_spend numeric NOT NULL DEFAULT 0,
  ADD COLUMN last_usage_day date;
UPDATE budgets SET needs_evaluation = true WHERE status <> 'archived';

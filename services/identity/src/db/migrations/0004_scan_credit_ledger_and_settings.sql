-- One debit per scan, and at most one refund of it: the ledger makes a retried debit or refund a no-op,
-- so credits used always equal debits minus refunds.
CREATE TABLE scan_credit_debits (
  scan_id text PRIMARY KEY,
  team_id text NOT NULL REFERENCES teams (id) ON DELETE CASCADE,
  credits bigint NOT NULL CHECK (credits > 0),
  debited_at timestamptz NOT NULL DEFAULT now(),
  refunded_at timestamptz
);
CREATE INDEX scan_credit_debits_team ON scan_credit_debits (team_id, debited_at);

-- Tag keys every cost record of the team should carry (cost posture's tag coverage, the missing-tags rule).
ALTER TABLE teams ADD COLUMN required_tags text[] NOT NULL DEFAULT '{}';

-- A scan's charge in identity, written before identity is asked and deleted with the transaction that
-- stores the scan: a row left behind (the process died between the two) is a charge whose scan was never
-- stored, which the charge sweeper gives back (scans/abandoned-charges.ts). `given_back_at` marks one
-- the sweeper has taken, so that no attempt stores its scan while the refund is on its way.
CREATE TABLE scan_charges (
  scan_id text PRIMARY KEY,
  team_id text NOT NULL,
  credits integer NOT NULL,
  created_at timestamptz NOT NULL,
  given_back_at timestamptz
);
CREATE INDEX scan_charges_created ON scan_charges (created_at);

-- (Was 0009_scan_reconcile until 0009_scan_plan_context took the number: IF NOT EXISTS keeps a database
-- that ran it under the old name.)
-- Lost scan work and retries counted from the outage (issue 19).
-- `requeued_at`: when the reconciler (scans/sweeper.ts) last re-published a shard's or a scan's merge
-- message because nothing had taken it for a few ack waits (a message lost in a rolling deploy or to the
-- stream's max age). Kept apart from heartbeat_at, which only the work itself moves.
-- `retry_since`: when the shard (or, on scans, the plan or merge) first met an unavailable dependency in
-- its current series of retries; its retry deadline counts from there. Set on release, cleared on success.
ALTER TABLE scan_shards
  ADD COLUMN IF NOT EXISTS requeued_at timestamptz,
  ADD COLUMN IF NOT EXISTS retry_since timestamptz;
ALTER TABLE scans
  ADD COLUMN IF NOT EXISTS requeued_at timestamptz,
  ADD COLUMN IF NOT EXISTS retry_since timestamptz;

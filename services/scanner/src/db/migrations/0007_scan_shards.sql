-- Sharded scans (issue 19). The worker that takes scanner.scan.requested plans the scan: it fixes the data
-- window's end and the rules' clock (`planned_now`) for every shard and the merge, and splits the scan into
-- `shards_total` shards (0 until planned), each a row below queued as scanner.scan_shard.requested.
ALTER TABLE scans
  ADD COLUMN window_end timestamptz,
  ADD COLUMN planned_now timestamptz,
  ADD COLUMN shards_total integer NOT NULL DEFAULT 0;

-- One shard of a scan: the resources whose id hashes to `shard_index` of `shard_count`. Claimed, reported
-- and taken over as scans are (worker_id, heartbeat_at); its outcome is stored once, by the run that holds
-- it, in the transaction that also decides (scan row locked) whether it was the last one to be stored.
CREATE TABLE scan_shards (
  scan_id text NOT NULL REFERENCES scans (id) ON DELETE CASCADE,
  shard_index integer NOT NULL CHECK (shard_index >= 0),
  shard_count integer NOT NULL CHECK (shard_count > shard_index),
  status text NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'running', 'done', 'failed')),
  worker_id text,
  heartbeat_at timestamptz,
  resources_scanned integer NOT NULL DEFAULT 0,
  -- The per-resource rules' results (RuleResult[]), every resource id the shard read, and what it left
  -- for the merge to judge with the whole scan (the runner's `pending`), kept until the merge records
  -- the scan's findings from all shards at once.
  results jsonb,
  resource_ids text[],
  pending jsonb,
  started_at timestamptz,
  completed_at timestamptz,
  PRIMARY KEY (scan_id, shard_index)
);

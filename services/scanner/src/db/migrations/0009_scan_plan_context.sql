-- What a scan's plan read once for all its shards (the runner's, JSON: for the rules over costs, the light
-- aggregates per-resource rules read besides each resource), so that N shards do not ask costs for them
-- N times over the whole window. Apart from `scans`, whose rows every scan listing reads.
CREATE TABLE scan_plans (
  scan_id text PRIMARY KEY REFERENCES scans (id) ON DELETE CASCADE,
  context jsonb NOT NULL
);

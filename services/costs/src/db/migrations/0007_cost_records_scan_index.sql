-- The scanner reads a window's resources page by page, each page a range of (connection_id, resource_id)
-- in byte order (COLLATE "C", the order of shard bounds and page cursors), grouped per resource and
-- charge period (scan-data.ts). This index gives rows in that order: a page reads only its own rows,
-- streamed from a merge of the period partitions' indexes, and stops at its LIMIT, instead of sorting
-- every row of the window for each page of each shard. Made on the root, it is made on every partition;
-- uploads build it on a period's load table before attaching it, so ATTACH adopts it (no build under the
-- connection's lock).
CREATE INDEX cost_records_scan ON cost_records (connection_id, resource_id COLLATE "C", charge_period_start);

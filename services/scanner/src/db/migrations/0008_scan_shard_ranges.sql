-- Shards are ranges of resource ids (issue 19): the plan asks costs for bounds splitting the window's
-- distinct resource ids into shards of about equal size, and each shard reads only its range (costs'
-- GetScanData resource_id_from/resource_id_to, byte order) instead of every row filtered by a hash.
-- `resource_id_from` is inclusive, `resource_id_to` exclusive; null: open on that side (the first and
-- last shard, or a scan in one shard).
ALTER TABLE scan_shards
  ADD COLUMN resource_id_from text,
  ADD COLUMN resource_id_to text;

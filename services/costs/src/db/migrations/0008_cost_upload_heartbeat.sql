-- An upload still loading says so every HEARTBEAT (ingest.ts) while its file streams and its swap runs:
-- one whose heartbeat stopped (its process is gone) has its load table, the size of its file, dropped
-- within minutes by the periodic sweep instead of after a day. Null for uploads of a version before
-- this one, which are swept by their start as before.
ALTER TABLE cost_uploads ADD COLUMN heartbeat_at timestamptz;

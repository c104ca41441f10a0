-- Scans no worker has taken yet (issue 19): the reconciler re-publishes the request of one pending for a
-- few ack waits, and the sweeper fails one pending for SCAN_MAX_QUIET_MS (scans/sweeper.ts). Both look
-- for them every sweep; the table holds every scan ever run.
CREATE INDEX IF NOT EXISTS scans_pending ON scans (created_at) WHERE status = 'pending';

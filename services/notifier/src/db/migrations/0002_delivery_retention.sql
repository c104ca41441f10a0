-- The retention sweep deletes finished deliveries by the time of their last change.
CREATE INDEX deliveries_finished_updated ON deliveries (updated_at) WHERE status <> 'pending';

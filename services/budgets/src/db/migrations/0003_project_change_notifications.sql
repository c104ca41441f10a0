-- Every change to a project or to one of its budgets tells the replicas' project read caches which project
-- changed (projects/detail-cache.ts), in the committing transaction: the notification is delivered at
-- commit, in commit order, or not at all when the transaction rolls back.
CREATE FUNCTION notify_project_changed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_TABLE_NAME = 'projects' THEN
    IF TG_OP <> 'INSERT' THEN
      PERFORM pg_notify('budgets_project_changed', OLD.id);
    END IF;
    IF TG_OP = 'INSERT' OR (TG_OP = 'UPDATE' AND NEW.id IS DISTINCT FROM OLD.id) THEN
      PERFORM pg_notify('budgets_project_changed', NEW.id);
    END IF;
  ELSE
    IF TG_OP <> 'INSERT' THEN
      PERFORM pg_notify('budgets_project_changed', OLD.project_id);
    END IF;
    IF TG_OP = 'INSERT' THEN
      PERFORM pg_notify('budgets_project_changed', NEW.project_id);
    ELSIF TG_OP = 'UPDATE' AND NEW.project_id IS DISTINCT FROM OLD.project_id THEN
      PERFORM pg_notify('budgets_project_changed', NEW.project_id);
    END IF;
  END IF;
  RETURN NULL;
END;
$$;

CREATE TRIGGER projects_changed AFTER INSERT OR UPDATE OR DELETE ON projects
  FOR EACH ROW EXECUTE FUNCTION notify_project_changed();
CREATE TRIGGER budgets_added_or_removed AFTER INSERT OR DELETE ON budgets
  FOR EACH ROW EXECUTE FUNCTION notify_project_changed();
-- Only the columns a project read shows (selectProjectDetail in projects/projects.ts: the summaries, their
-- order and the count of budgets not archived): evaluations and sweeps also update bookkeeping columns
-- (needs_evaluation, thresholds, current_spend, ...) many times, and those must not empty the caches.
-- A column added to the project read must be added here.
CREATE TRIGGER budgets_changed AFTER UPDATE ON budgets
  FOR EACH ROW
  WHEN ((OLD.project_id, OLD.team_id, OLD.name, OLD.amount, OLD.currency, OLD.period, OLD.status, OLD.percentage_used,
         OLD.created_at, OLD.id)
    IS DISTINCT FROM (NEW.project_id, NEW.team_id, NEW.name, NEW.amount, NEW.currency, NEW.period, NEW.status,
         NEW.percentage_used, NEW.created_at, NEW.id))
  EXECUTE FUNCTION notify_project_changed();

-- Not covered: TRUNCATE, and changes applied with session_replication_role = replica (logical
-- replication, pg_restore --disable-triggers); neither is used. Entries are read again after 5 minutes
-- regardless.

-- Every change to a project or to one of its budgets tells the replicas' project read caches which project
-- changed (projects/detail-cache.ts), in the committing transaction: the notification is delivered at
-- commit, in commit order, or not at all when the transaction rolls back.
CREATE FUNCTION notify_project_changed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_TABLE_NAME = 'projects' THEN
    IF TG_OP = 'DELETE' THEN
      PERFORM pg_notify('budgets_project_changed', OLD.id);
    ELSE
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
CREATE TRIGGER budgets_changed AFTER INSERT OR UPDATE OR DELETE ON budgets
  FOR EACH ROW EXECUTE FUNCTION notify_project_changed();

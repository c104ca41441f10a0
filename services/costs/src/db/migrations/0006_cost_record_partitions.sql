-- Raw rows in partitions: `cost_records` is partitioned by connection (LIST), each connection's table by
-- billing period (LIST on BillingPeriodStart), so an upload restating a period replaces one partition in
-- a transaction (drop the old, attach the new, loaded beforehand by COPY) instead of deleting and
-- inserting every row of it, and retention drops whole periods. docs/decisions.md says why two levels.
-- Names and readers are unchanged: `SELECT … FROM cost_records WHERE connection_id = … AND
-- billing_period_start …` reads only the partitions it names.

-- Each period partition of a connection, what the swap, the purge and the retention sweep work from
-- (no parsing of the catalog's bounds). `rows` is what the upload stored; null when unknown (a
-- partition made for rows inserted directly, by a test or the benchmark's fill).
CREATE TABLE cost_record_periods (
  connection_id text NOT NULL,
  billing_period_start date NOT NULL,
  table_name text NOT NULL UNIQUE,
  rows bigint,
  upload_id text,
  stored_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (connection_id, billing_period_start)
);

-- Table names: `cost_records_<connection id>` and `cost_records_<connection id>_<yyyymmdd>` (ids are
-- lower-case letters, digits and `_`; anything else, or a long id, is named by its md5).
CREATE FUNCTION cost_records_connection_table(p_connection text) RETURNS text LANGUAGE sql IMMUTABLE AS $$
  SELECT 'cost_records_' || CASE WHEN p_connection ~ '^[a-z0-9_]{1,40}$' THEN p_connection ELSE md5(p_connection) END
$$;
CREATE FUNCTION cost_records_period_table(p_connection text, p_period date) RETURNS text LANGUAGE sql IMMUTABLE AS $$
  SELECT cost_records_connection_table(p_connection) || '_' || to_char(p_period, 'YYYYMMDD')
$$;

-- The new root, built beside the old table so that readers go on reading the old one while the rows
-- are copied; only the final drop and rename take an exclusive lock.
CREATE TABLE cost_records_partitioned (LIKE cost_records INCLUDING DEFAULTS) PARTITION BY LIST (connection_id);

-- Moving the rows: uploads (writers) wait, readers do not. One partition per connection and period,
-- each filled by one INSERT … SELECT through the old (connection_id, billing_period_start) index and
-- attached with a CHECK constraint that proves its bounds (no validation scan).
LOCK TABLE cost_records IN SHARE MODE;
DO $$
DECLARE
  c record;
  p record;
  parent text;
  part text;
  moved bigint;
BEGIN
  FOR c IN SELECT DISTINCT connection_id FROM cost_records LOOP
    parent := cost_records_connection_table(c.connection_id);
    EXECUTE format('CREATE TABLE %I (LIKE cost_records_partitioned INCLUDING DEFAULTS) PARTITION BY LIST (billing_period_start)', parent);
    EXECUTE format('ALTER TABLE cost_records_partitioned ATTACH PARTITION %I FOR VALUES IN (%L)', parent, c.connection_id);
    FOR p IN SELECT billing_period_start, max(upload_id) AS upload_id FROM cost_records
        WHERE connection_id = c.connection_id GROUP BY billing_period_start LOOP
      part := cost_records_period_table(c.connection_id, p.billing_period_start);
      EXECUTE format('CREATE TABLE %I (LIKE cost_records_partitioned INCLUDING DEFAULTS, CONSTRAINT %I CHECK (connection_id = %L AND billing_period_start = %L))',
        part, part || '_bounds', c.connection_id, p.billing_period_start);
      EXECUTE format('INSERT INTO %I SELECT * FROM cost_records WHERE connection_id = $1 AND billing_period_start = $2', part)
        USING c.connection_id, p.billing_period_start;
      GET DIAGNOSTICS moved = ROW_COUNT;
      EXECUTE format('ALTER TABLE %I ATTACH PARTITION %I FOR VALUES IN (%L)', parent, part, p.billing_period_start);
      INSERT INTO cost_record_periods (connection_id, billing_period_start, table_name, rows, upload_id)
        VALUES (c.connection_id, p.billing_period_start, part, moved, p.upload_id);
    END LOOP;
  END LOOP;
END $$;
DROP TABLE cost_records;
ALTER TABLE cost_records_partitioned RENAME TO cost_records;

-- A connection's table, made (and attached to the root) the first time it is needed. Under the
-- connection's advisory lock, the one uploads take, so two first uploads do not race.
CREATE FUNCTION cost_records_connection(p_connection text) RETURNS text LANGUAGE plpgsql
SET search_path FROM CURRENT AS $$
DECLARE
  parent text := cost_records_connection_table(p_connection);
BEGIN
  PERFORM pg_advisory_xact_lock(hashtext('costs.cost_data'), hashtext(p_connection));
  IF to_regclass(quote_ident(parent)) IS NULL THEN
    EXECUTE format('CREATE TABLE %I (LIKE cost_records INCLUDING DEFAULTS) PARTITION BY LIST (billing_period_start)', parent);
    EXECUTE format('ALTER TABLE cost_records ATTACH PARTITION %I FOR VALUES IN (%L)', parent, p_connection);
  END IF;
  RETURN parent;
END $$;

-- Puts `p_table` (shaped like cost_records, holding exactly the connection's rows of the period, with
-- a CHECK constraint saying so) in place of the period's partition: the old one is dropped, the new one
-- renamed to the period's name and attached, in the caller's transaction. Readers of the period wait for
-- that transaction's commit (the drop locks the connection's table) and then read the new rows: they
-- see the old period or the new one, never both, never neither. Returns the rows the period held
-- (0 when it was new).
CREATE FUNCTION cost_records_swap(p_connection text, p_period date, p_table text, p_rows bigint, p_upload text)
RETURNS bigint LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
DECLARE
  parent text := cost_records_connection(p_connection);
  part text := cost_records_period_table(p_connection, p_period);
  replaced bigint := 0;
BEGIN
  IF to_regclass(quote_ident(part)) IS NOT NULL THEN
    SELECT rows INTO replaced FROM cost_record_periods
      WHERE connection_id = p_connection AND billing_period_start = p_period;
    IF replaced IS NULL THEN
      EXECUTE format('SELECT count(*) FROM %I', part) INTO replaced;
    END IF;
    EXECUTE format('DROP TABLE %I', part);
  END IF;
  EXECUTE format('ALTER TABLE %I RENAME TO %I', p_table, part);
  EXECUTE format('ALTER TABLE %I ATTACH PARTITION %I FOR VALUES IN (%L)', parent, part, p_period);
  INSERT INTO cost_record_periods (connection_id, billing_period_start, table_name, rows, upload_id)
    VALUES (p_connection, p_period, part, p_rows, p_upload)
    ON CONFLICT (connection_id, billing_period_start) DO UPDATE SET
      table_name = excluded.table_name, rows = excluded.rows, upload_id = excluded.upload_id, stored_at = now();
  RETURN replaced;
END $$;

-- An empty partition for a connection and period, made when missing: for rows inserted directly (tests,
-- the benchmark's fill), since a row without a partition is refused. Uploads swap partitions instead.
CREATE FUNCTION cost_records_partition(p_connection text, p_period date) RETURNS text LANGUAGE plpgsql
SET search_path FROM CURRENT AS $$
DECLARE
  parent text := cost_records_connection(p_connection);
  part text := cost_records_period_table(p_connection, p_period);
BEGIN
  IF to_regclass(quote_ident(part)) IS NULL THEN
    EXECUTE format('CREATE TABLE %I (LIKE cost_records INCLUDING DEFAULTS)', part);
    EXECUTE format('ALTER TABLE %I ATTACH PARTITION %I FOR VALUES IN (%L)', parent, part, p_period);
    INSERT INTO cost_record_periods (connection_id, billing_period_start, table_name)
      VALUES (p_connection, p_period, part);
  ELSE
    -- Rows will be added that the upload did not count.
    UPDATE cost_record_periods SET rows = NULL WHERE table_name = part;
  END IF;
  RETURN part;
END $$;

-- Drops a period's partition (retention) or, with a null period, all of a connection's (purge).
-- Returns the partitions dropped.
CREATE FUNCTION cost_records_drop(p_connection text, p_period date) RETURNS integer LANGUAGE plpgsql
SET search_path FROM CURRENT AS $$
DECLARE
  dropped integer := 0;
  part text;
BEGIN
  PERFORM pg_advisory_xact_lock(hashtext('costs.cost_data'), hashtext(p_connection));
  IF p_period IS NULL THEN
    SELECT count(*) INTO dropped FROM cost_record_periods WHERE connection_id = p_connection;
    EXECUTE format('DROP TABLE IF EXISTS %I', cost_records_connection_table(p_connection));
    DELETE FROM cost_record_periods WHERE connection_id = p_connection;
    RETURN dropped;
  END IF;
  part := cost_records_period_table(p_connection, p_period);
  IF to_regclass(quote_ident(part)) IS NOT NULL THEN
    EXECUTE format('DROP TABLE %I', part);
    dropped := 1;
  END IF;
  DELETE FROM cost_record_periods WHERE connection_id = p_connection AND billing_period_start = p_period;
  RETURN dropped;
END $$;

-- Raw rows of a team's billing periods older than this many months are dropped (whole partitions);
-- rollups are kept. No row, or null: kept forever.
CREATE TABLE cost_retention (
  team_id text PRIMARY KEY,
  raw_retention_months integer CHECK (raw_retention_months BETWEEN 1 AND 1200),
  updated_at timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE connections (
  id text PRIMARY KEY,
  team_id text NOT NULL,
  name text NOT NULL,
  provider text NOT NULL CHECK (provider IN ('aws', 'azure', 'gcp', 'oci', 'other')),
  status text NOT NULL DEFAULT 'active' CHECK (status IN ('active', 'disabled')),
  last_ingested_at timestamptz,
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now()
);
-- Connection names are unique per team regardless of case.
CREATE UNIQUE INDEX connections_team_name ON connections (team_id, lower(name));
CREATE INDEX connections_team_created ON connections (team_id, created_at, id);

-- Exchange rates the operator sets: 1 from_currency = rate to_currency. Not team-scoped.
CREATE TABLE exchange_rates (
  from_currency text NOT NULL,
  to_currency text NOT NULL,
  rate numeric NOT NULL CHECK (rate > 0),
  updated_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (from_currency, to_currency)
);

-- Daily rollups of the raw FOCUS rows, what posture and scans read by service and resource: one row
-- per connection, UTC charge day, billing period, service, resource, tag set and billing currency;
-- rebuilt for a billing period whenever that period is uploaded again.
CREATE TABLE daily_costs (
  team_id text NOT NULL,
  connection_id text NOT NULL,
  day date NOT NULL,
  billing_period_start date NOT NULL,
  service_name text NOT NULL DEFAULT '',
  resource_id text NOT NULL DEFAULT '',
  tags jsonb NOT NULL DEFAULT '{}',
  billing_currency text NOT NULL,
  billed_cost numeric NOT NULL,
  effective_cost numeric NOT NULL,
  records integer NOT NULL
);
CREATE INDEX daily_costs_connection_day ON daily_costs (connection_id, day);
CREATE INDEX daily_costs_connection_period ON daily_costs (connection_id, billing_period_start);

-- What spend queries read (budget evaluation, daily series, tag coverage): `daily_costs` summed over
-- services and resources, one row per connection, day, billing currency and tag set. A month of a
-- connection is then a few thousand rows, whatever the number of resources (ten million hourly raw
-- rows of 13k resources make 400k rows of `daily_costs` but about 2k here), so a budget is evaluated
-- in milliseconds. Kept by the triggers below in the same statement as every change of `daily_costs`,
-- so no writer can forget it. `tags_hash` (md5 of jsonb's canonical text) keys the tag set in a
-- btree of bounded size.
CREATE TABLE daily_spend (
  team_id text NOT NULL,
  connection_id text NOT NULL,
  day date NOT NULL,
  billing_currency text NOT NULL,
  tags jsonb NOT NULL,
  tags_hash text NOT NULL,
  billed_cost numeric NOT NULL,
  effective_cost numeric NOT NULL,
  records bigint NOT NULL,
  PRIMARY KEY (connection_id, day, billing_currency, tags_hash)
);

-- One function for the three triggers: what left `daily_costs` (`removed`) is subtracted, and a row no
-- record contributes to any more goes (numeric is exact); what arrived (`added`) is added.
CREATE FUNCTION daily_spend_sync() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP IN ('DELETE', 'UPDATE') THEN
    UPDATE daily_spend s SET
      billed_cost = s.billed_cost - r.billed_cost,
      effective_cost = s.effective_cost - r.effective_cost,
      records = s.records - r.records
    FROM (
      SELECT connection_id, day, billing_currency, md5(tags::text) AS tags_hash,
        sum(billed_cost) AS billed_cost, sum(effective_cost) AS effective_cost, sum(records) AS records
      FROM removed GROUP BY connection_id, day, billing_currency, tags
    ) r
    WHERE s.connection_id = r.connection_id AND s.day = r.day AND s.billing_currency = r.billing_currency
      AND s.tags_hash = r.tags_hash;
    DELETE FROM daily_spend s USING (SELECT DISTINCT connection_id, day FROM removed) r
    WHERE s.connection_id = r.connection_id AND s.day = r.day AND s.records <= 0;
  END IF;
  IF TG_OP IN ('INSERT', 'UPDATE') THEN
    INSERT INTO daily_spend AS s (team_id, connection_id, day, billing_currency, tags, tags_hash,
        billed_cost, effective_cost, records)
      SELECT team_id, connection_id, day, billing_currency, tags, md5(tags::text),
        sum(billed_cost), sum(effective_cost), sum(records)
      FROM added GROUP BY team_id, connection_id, day, billing_currency, tags
    ON CONFLICT (connection_id, day, billing_currency, tags_hash) DO UPDATE SET
      billed_cost = s.billed_cost + excluded.billed_cost,
      effective_cost = s.effective_cost + excluded.effective_cost,
      records = s.records + excluded.records;
  END IF;
  RETURN NULL;
END $$;

CREATE TRIGGER daily_costs_inserted AFTER INSERT ON daily_costs
  REFERENCING NEW TABLE AS added FOR EACH STATEMENT EXECUTE FUNCTION daily_spend_sync();
CREATE TRIGGER daily_costs_deleted AFTER DELETE ON daily_costs
  REFERENCING OLD TABLE AS removed FOR EACH STATEMENT EXECUTE FUNCTION daily_spend_sync();
CREATE TRIGGER daily_costs_updated AFTER UPDATE ON daily_costs
  REFERENCING OLD TABLE AS removed NEW TABLE AS added FOR EACH STATEMENT EXECUTE FUNCTION daily_spend_sync();

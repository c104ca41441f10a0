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

-- Daily rollups of the raw FOCUS rows: what budgets, posture and scans read. One row per connection,
-- UTC charge day, billing period, service, resource, tag set and billing currency; rebuilt for a billing
-- period whenever that period is uploaded again.
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
CREATE INDEX daily_costs_tags ON daily_costs USING gin (tags jsonb_path_ops);

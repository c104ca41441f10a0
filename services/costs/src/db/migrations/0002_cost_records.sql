-- Raw FOCUS rows as uploaded, the columns cost analysis reads (the file's other columns are checked, not
-- kept). A billing period of a connection is replaced as a whole when it is uploaded again.
CREATE TABLE cost_records (
  connection_id text NOT NULL,
  upload_id text NOT NULL,
  billing_period_start date NOT NULL,
  billing_period_end timestamptz NOT NULL,
  charge_period_start timestamptz NOT NULL,
  charge_period_end timestamptz NOT NULL,
  billed_cost numeric NOT NULL,
  effective_cost numeric NOT NULL,
  list_cost numeric,
  contracted_cost numeric,
  billing_currency text NOT NULL,
  service_name text,
  service_category text,
  resource_id text,
  resource_name text,
  resource_type text,
  region_id text,
  sub_account_id text,
  sub_account_name text,
  billing_account_id text,
  charge_category text,
  sku_id text,
  pricing_quantity numeric,
  pricing_unit text,
  consumed_quantity numeric,
  consumed_unit text,
  provider_name text,
  tags jsonb
);
CREATE INDEX cost_records_connection_period ON cost_records (connection_id, billing_period_start);

-- One row per upload: what was received and how it ended. A `loading` upload owns a staging table
-- (`staging_table`) that is dropped when it ends; one left by a crash is dropped by the sweep at start.
CREATE TABLE cost_uploads (
  id text PRIMARY KEY,
  team_id text NOT NULL,
  connection_id text NOT NULL,
  status text NOT NULL CHECK (status IN ('loading', 'stored', 'refused', 'failed')),
  staging_table text NOT NULL,
  focus_version text,
  rows bigint,
  rows_replaced bigint,
  bytes bigint,
  billing_periods date[],
  error text,
  started_at timestamptz NOT NULL DEFAULT now(),
  finished_at timestamptz
);
CREATE INDEX cost_uploads_connection ON cost_uploads (connection_id, started_at);
CREATE INDEX cost_uploads_loading ON cost_uploads (started_at) WHERE status = 'loading';

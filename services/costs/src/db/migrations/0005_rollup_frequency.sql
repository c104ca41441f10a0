-- The rollups tell usage-based spend from the rest, and the spend that can carry tags from the spend
-- that cannot. One migration, one rebuild.
--
-- `usage_based`: whether a row's spend follows usage, so a forecast projects it at its run rate and
-- counts a monthly fee, a purchase, a tax or a credit once. costgov's one rule
-- (services/costs/src/cost-data/usage-based.ts, docs/decisions.md): ChargeCategory `Usage` and
-- ChargeFrequency `Usage-Based`, both in any case; a null column does not decide (a row with neither is
-- usage-based), so Purchase, Tax, Credit and Adjustment rows never are, nor Recurring and One-Time
-- charges. Part of both rollups' grouping, so a day has at most two rows per tag set.
--
-- `untaggable_cost`: the effective cost of a rollup row's records without a ResourceId or whose
-- ChargeCategory is Tax, Credit, Purchase or Adjustment (the scanner's untaggableCategories), left out
-- of the cost posture's tag coverage. A sum, not part of the grouping.
ALTER TABLE daily_costs ADD COLUMN usage_based boolean NOT NULL DEFAULT true,
  ADD COLUMN untaggable_cost numeric NOT NULL DEFAULT 0;
ALTER TABLE daily_spend ADD COLUMN usage_based boolean NOT NULL DEFAULT true,
  ADD COLUMN untaggable_cost numeric NOT NULL DEFAULT 0;
ALTER TABLE daily_spend DROP CONSTRAINT daily_spend_pkey;
ALTER TABLE daily_spend ADD PRIMARY KEY (connection_id, day, billing_currency, tags_hash, usage_based);

CREATE OR REPLACE FUNCTION daily_spend_sync() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP IN ('DELETE', 'UPDATE') THEN
    UPDATE daily_spend s SET
      billed_cost = s.billed_cost - r.billed_cost,
      effective_cost = s.effective_cost - r.effective_cost,
      untaggable_cost = s.untaggable_cost - r.untaggable_cost,
      records = s.records - r.records
    FROM (
      SELECT connection_id, day, billing_currency, md5(tags::text) AS tags_hash, usage_based,
        sum(billed_cost) AS billed_cost, sum(effective_cost) AS effective_cost,
        sum(untaggable_cost) AS untaggable_cost, sum(records) AS records
      FROM removed GROUP BY connection_id, day, billing_currency, tags, usage_based
    ) r
    WHERE s.connection_id = r.connection_id AND s.day = r.day AND s.billing_currency = r.billing_currency
      AND s.tags_hash = r.tags_hash AND s.usage_based = r.usage_based;
    DELETE FROM daily_spend s USING (SELECT DISTINCT connection_id, day FROM removed) r
    WHERE s.connection_id = r.connection_id AND s.day = r.day AND s.records <= 0;
  END IF;
  IF TG_OP IN ('INSERT', 'UPDATE') THEN
    INSERT INTO daily_spend AS s (team_id, connection_id, day, billing_currency, tags, tags_hash, usage_based,
        billed_cost, effective_cost, untaggable_cost, records)
      SELECT team_id, connection_id, day, billing_currency, tags, md5(tags::text), usage_based,
        sum(billed_cost), sum(effective_cost), sum(untaggable_cost), sum(records)
      FROM added GROUP BY team_id, connection_id, day, billing_currency, tags, usage_based
    ON CONFLICT (connection_id, day, billing_currency, tags_hash, usage_based) DO UPDATE SET
      billed_cost = s.billed_cost + excluded.billed_cost,
      effective_cost = s.effective_cost + excluded.effective_cost,
      untaggable_cost = s.untaggable_cost + excluded.untaggable_cost,
      records = s.records + excluded.records;
  END IF;
  RETURN NULL;
END $$;

-- Rollups written before this migration counted everything as usage and nothing as untaggable: rebuilt
-- once from the raw rows (the triggers fill daily_spend again). Rows of a connection already deleted
-- (awaiting its purge) are not rolled up again; spend queries ignored them already.
TRUNCATE daily_costs, daily_spend;
INSERT INTO daily_costs (team_id, connection_id, day, billing_period_start, service_name, resource_id, tags,
    billing_currency, usage_based, billed_cost, effective_cost, untaggable_cost, records)
  SELECT c.team_id, r.connection_id, (r.charge_period_start AT TIME ZONE 'UTC')::date, r.billing_period_start,
    coalesce(r.service_name, ''), coalesce(r.resource_id, ''), coalesce(r.tags, '{}'), r.billing_currency,
    (coalesce(lower(r.charge_category), 'usage') = 'usage' AND coalesce(lower(r.charge_frequency), 'usage-based') = 'usage-based'),
    sum(r.billed_cost), sum(r.effective_cost),
    coalesce(sum(r.effective_cost) FILTER (WHERE coalesce(r.resource_id, '') = ''
      OR r.charge_category IN ('Tax', 'Credit', 'Purchase', 'Adjustment')), 0),
    count(*)
  FROM cost_records r JOIN connections c ON c.id = r.connection_id
  GROUP BY 1, 2, 3, 4, 5, 6, 7, 8, 9;

-- The daily rollup is kept per billing period, written by the upload itself; `daily_costs` goes.
--
-- `daily_costs` held the raw rows summed per day, service, resource, tag set and currency, and nothing
-- read it but the triggers keeping `daily_spend` (what every spend query reads): when a period was
-- uploaded again, its `daily_costs` rows were deleted so that the triggers could subtract them from the
-- days they had added to. For a large tenant that table was nearly as long as the raw rows (a row per
-- resource and day: 3M rows a month at 100,000 resources, most of an upload's time after its body went
-- into writing them and their triggers) and grew by as much every month, for no reader.
--
-- `daily_spend` now carries the billing period in its key: an upload deletes the period's rows and
-- inserts them again, summed straight from its rows (one row per connection, day, billing period,
-- currency, tag set and usage-based flag: a few thousand a month), in the swap's transaction. A day
-- that two periods charge (a row charged outside its billing period) has a row for each; every spend
-- query sums them.
DROP TRIGGER daily_costs_inserted ON daily_costs;
DROP TRIGGER daily_costs_deleted ON daily_costs;
DROP TRIGGER daily_costs_updated ON daily_costs;
DROP FUNCTION daily_spend_sync();

-- Rebuilt from `daily_costs` with the period (the same rows summed in another grouping: exact, numeric),
-- under the new key only (under the old one a day two periods charge would collide).
TRUNCATE daily_spend;
ALTER TABLE daily_spend DROP CONSTRAINT daily_spend_pkey;
ALTER TABLE daily_spend ADD COLUMN billing_period_start date;
INSERT INTO daily_spend (team_id, connection_id, day, billing_period_start, billing_currency, tags, tags_hash,
    usage_based, billed_cost, effective_cost, untaggable_cost, records)
  SELECT team_id, connection_id, day, billing_period_start, billing_currency, tags, md5(tags::text), usage_based,
    sum(billed_cost), sum(effective_cost), sum(untaggable_cost), sum(records)
  FROM daily_costs
  GROUP BY team_id, connection_id, day, billing_period_start, billing_currency, tags, usage_based;
ALTER TABLE daily_spend ALTER COLUMN billing_period_start SET NOT NULL;
ALTER TABLE daily_spend
  ADD PRIMARY KEY (connection_id, day, billing_currency, tags_hash, usage_based, billing_period_start);

DROP TABLE daily_costs;
